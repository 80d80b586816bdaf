"""MACDConfig: captions grounded in image regions, anchored to the starting model (Cui et al., 2020)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import paper_default
from sbert_nonling.configs.grounding import GroundingConfig
from sbert_nonling.configs.sentence_encoder import SingleRunConfig, TextData
from sbert_nonling.util.choices import Direction, TrainingHead


@dataclass
class MACDConfig(GroundingConfig):
    """MACD: defaults are the paper's (captions only; symmetric grounding plus the word-region term; anchored to the
    starting model; METHODS.md). Paper: EMNLP 2020, "Unsupervised Natural Language Inference via Decoupled Multimodal
    Contrastive Learning". See :class:`GroundingConfig`."""

    method: ClassVar[str] = "macd"

    training_head: TrainingHead = paper_default(SingleRunConfig, "training_head", "none")
    data: TextData = paper_default(SingleRunConfig, "data", "captions")
    learning_rate: float = paper_default(SingleRunConfig, "learning_rate", 1e-4)
    epochs: int = paper_default(SingleRunConfig, "epochs", 10)
    gradient_accumulation_steps: int = paper_default(GroundingConfig, "gradient_accumulation_steps", 8)
    regions: bool = paper_default(GroundingConfig, "regions", True)
    grounding_weight: float = paper_default(GroundingConfig, "grounding_weight", 1.0)
    grounding_direction: Direction = paper_default(GroundingConfig, "grounding_direction", "symmetric")
    grounding_temperature: float = paper_default(GroundingConfig, "grounding_temperature", 0.1)
    projection_dimension: int = paper_default(GroundingConfig, "projection_dimension", 768)
    projection_head: TrainingHead = paper_default(GroundingConfig, "projection_head", "linear")
    local_weight: float = paper_default(GroundingConfig, "local_weight", 1.0)
    anchor: bool = paper_default(GroundingConfig, "anchor", True)
    freeze_position_embeddings: bool = paper_default(GroundingConfig, "freeze_position_embeddings", True)
    warmup_steps: float = paper_default(GroundingConfig, "warmup_steps", 0.1)
