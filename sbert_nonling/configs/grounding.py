"""GroundingConfig: sentence embeddings grounded in frozen image features of captioned images (MCSE, MACD)."""

from __future__ import annotations

from dataclasses import dataclass

from sbert_nonling.configs.base import setting
from sbert_nonling.configs.losses import AnchorConfig, GroundingLossConfig
from sbert_nonling.configs.sentence_encoder import SingleRunConfig


@dataclass
class GroundingConfig(SingleRunConfig):
    """The grounding side shared by MCSE and MACD: the frozen image encoder, the caption <-> image contrastive term
    (``grounding``, :class:`GroundingLossConfig` for :class:`~sbert_nonling.losses.MultimodalAlignLoss`) and the
    optional anchor to a frozen copy of the starting model (``anchor``, :class:`AnchorConfig` for
    :class:`~sbert_nonling.losses.DistillAnchorLoss`); see :class:`SingleRunConfig`."""

    # the training run (training_arguments)
    gradient_accumulation_steps: int = setting(1, "batches per optimizer step", minimum=1)
    freeze_position_embeddings: bool = setting(False, "keep the encoder's position embeddings frozen")
    # the image features
    image_encoder: str = setting("resnet50", "frozen image feature extractor: resnet50 or efficientnet-lite0")
    image_dimension: int = setting(2048, "dimension of the image features", minimum=1)
    regions: bool = setting(False, "also use the region grid (word-region DAMSM term, MACD)")
    # the losses
    grounding: GroundingLossConfig = setting(GroundingLossConfig(), "the caption <-> image term (MultimodalAlignLoss)")
    anchor: AnchorConfig = setting(AnchorConfig(), "the anchor to the starting model (DistillAnchorLoss)")
