from __future__ import annotations

from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss

__all__ = ["SimCSELoss", "UnpairedModalityContrastiveLoss"]
