"""MACDConfig: captions grounded in image regions, anchored to the starting model (Cui et al., 2020)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import paper_default
from sbert_nonling.configs.grounding import GroundingConfig
from sbert_nonling.configs.losses import AnchorConfig, GroundingLossConfig, SimCSELossConfig
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig, SingleRunConfig, TextData


@dataclass
class MACDConfig(GroundingConfig):
    """MACD: defaults are the paper's. Captions only, 10 epochs at lr 1e-4 with 8 batches per optimizer step and 10 %
    warmup, position embeddings frozen; symmetric caption <-> image InfoNCE at temperature 0.1 through linear heads to
    768 dimensions (weight 1) plus the word-region DAMSM term (weight 1) on the image region grid; anchored to a
    frozen copy of the starting model (KL weight 5 at T = 2, token cosine weight 1). Paper: EMNLP 2020,
    "Unsupervised Natural Language Inference via Decoupled Multimodal Contrastive Learning". See
    :class:`GroundingConfig`."""

    method: ClassVar[str] = "macd"

    text_loss: SimCSELossConfig = paper_default(
        SentenceEncoderConfig, "text_loss", SimCSELossConfig(training_head="none")
    )
    data: TextData = paper_default(SingleRunConfig, "data", "captions")
    learning_rate: float = paper_default(SingleRunConfig, "learning_rate", 1e-4)
    epochs: int = paper_default(SingleRunConfig, "epochs", 10)
    gradient_accumulation_steps: int = paper_default(GroundingConfig, "gradient_accumulation_steps", 8)
    regions: bool = paper_default(GroundingConfig, "regions", True)
    grounding: GroundingLossConfig = paper_default(
        GroundingConfig,
        "grounding",
        GroundingLossConfig(
            weight=1.0,
            direction="symmetric",
            temperature=0.1,
            projection_dimension=768,
            projection_head="linear",
            local_weight=1.0,
        ),
    )
    anchor: AnchorConfig = paper_default(GroundingConfig, "anchor", AnchorConfig(enabled=True))
    freeze_position_embeddings: bool = paper_default(GroundingConfig, "freeze_position_embeddings", True)
    warmup_steps: float = paper_default(GroundingConfig, "warmup_steps", 0.1)


register_method(
    MethodSpec(
        MACDConfig,
        builder="sbert_nonling.methods.grounding:build_grounding",
        training_sources=("text_file", "nli_file", "image_dir", "captions_file", "image_features"),
    )
)
