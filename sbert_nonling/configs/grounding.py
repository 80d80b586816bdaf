"""GroundingConfig: sentence embeddings grounded in frozen image features of captioned images (MCSE, MACD)."""

from __future__ import annotations

from dataclasses import dataclass

from sbert_nonling.configs.base import setting
from sbert_nonling.configs.sentence_encoder import SingleRunConfig
from sbert_nonling.util.choices import Direction, TrainingHead


@dataclass
class GroundingConfig(SingleRunConfig):
    """The grounding side shared by MCSE and MACD: the frozen image encoder, the caption <-> image contrastive term
    (:class:`~sbert_nonling.losses.MultimodalAlignLoss`) and the optional anchor to a frozen copy of the starting model
    (:class:`~sbert_nonling.losses.DistillAnchorLoss`)."""

    # the training run (training_arguments)
    gradient_accumulation_steps: int = setting(1, "batches per optimizer step", minimum=1)
    warmup_steps: float = setting(
        0, "linear warmup of the learning rate: steps, or a fraction of the training steps below 1", minimum=0.0
    )
    freeze_position_embeddings: bool = setting(False, "keep the encoder's position embeddings frozen")
    # the image features
    image_encoder: str = setting("resnet50", "frozen image feature extractor: resnet50 or efficientnet-lite0")
    image_dimension: int = setting(2048, "dimension of the image features", minimum=1)
    regions: bool = setting(False, "also use the region grid (word-region DAMSM term, MACD)")
    # MultimodalAlignLoss
    grounding_weight: float = setting(0.01, "weight of the grounding loss", minimum=0.0)
    grounding_direction: Direction = setting("text_to_image", "text_to_image (MCSE) or symmetric (MACD)")
    grounding_temperature: float = setting(0.05, "temperature of the grounding softmax", above=0.0)
    projection_dimension: int = setting(256, "dimension of the shared grounding space", minimum=1)
    projection_head: TrainingHead = setting(
        "mlp", "kind of the projection heads: mlp (Linear + Tanh, MCSE) or linear (MACD)"
    )
    local_weight: float = setting(0.0, "weight of the word-region (DAMSM) term", minimum=0.0)
    # DistillAnchorLoss
    anchor: bool = setting(False, "anchor to a frozen copy of the starting model (MACD)")
    anchor_kl_weight: float = setting(5.0, "weight of the anchor's KL term", minimum=0.0)
    anchor_cosine_weight: float = setting(1.0, "weight of the anchor's token cosine term", minimum=0.0)
    anchor_distillation_temperature: float = setting(
        2.0, "distillation temperature of the anchor's KL term", above=0.0
    )
