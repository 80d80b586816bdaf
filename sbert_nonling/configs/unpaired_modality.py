"""UnpairedModalityConfig: SimCSE plus contrastive steps on unpaired images or audio through the same encoder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sbert_nonling.configs.base import setting
from sbert_nonling.configs.losses import ModalityLossConfig
from sbert_nonling.configs.simcse import SimCSEConfig
from sbert_nonling.util.choices import EncoderEntry, Scheme

#: The modalities an unpaired route reads.
UnpairedModality = Literal["image", "audio"]


@dataclass
class UnpairedModalityConfig(SimCSEConfig):
    """The modality side shared by VisualCSE and AudioCSE (Jian et al., 2022): which modality, how its tokens enter
    the encoder, its contrastive loss and its own optimizer; subclasses add the front-end's settings."""

    modality: UnpairedModality = setting("image", "the unpaired modality")
    scheme: Scheme = setting("alternating", "alternating (one modality step, own AdamW, then one text step) or joint")
    encoder_entry: EncoderEntry = setting(
        "bypass", "front-end tokens enter the encoder layers (bypass) or its embeddings"
    )
    modality_loss: ModalityLossConfig = setting(
        ModalityLossConfig(), "the modality contrastive loss (UnpairedModalityContrastiveLoss)"
    )
    modality_batch_size: int = setting(48, "images / clips per modality step", minimum=1)
    modality_learning_rate: float = setting(1e-6, "modality AdamW learning rate (alternating scheme)", minimum=0.0)
    modality_weight: float = setting(0.05, "weight of the modality loss (joint scheme)", minimum=0.0)
    token_keep_ratio: float = setting(
        1.0, "share of patch tokens a view keeps in training (FLIP patch dropout; 1: all)", above=0.0, maximum=1.0
    )
