"""MCSEConfig: SimCSE plus text -> image grounding on interleaved caption batches (Zhang et al., 2022)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import paper_default
from sbert_nonling.configs.grounding import GroundingConfig
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.sentence_encoder import SingleRunConfig


@dataclass
class MCSEConfig(GroundingConfig):
    """MCSE: defaults are the wiki + Flickr30k BERT-base row (SimCSE-unsup, plus text -> image InfoNCE on caption
    batches over frozen ResNet-50 features). Paper: https://arxiv.org/abs/2204.10931. See :class:`GroundingConfig`."""

    method: ClassVar[str] = "mcse"

    epochs: int = paper_default(SingleRunConfig, "epochs", 3)


register_method(
    MethodSpec(
        MCSEConfig,
        builder="sbert_nonling.methods.grounding:build_grounding",
        training_sources=("text_file", "nli_file", "image_dir", "captions_file", "image_features"),
    )
)
