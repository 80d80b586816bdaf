from __future__ import annotations

from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.symmetric_info_nce import SymmetricInfoNCE
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss

__all__ = ["DistillAnchorLoss", "MultimodalAlignLoss", "SimCSELoss", "SymmetricInfoNCE", "UnpairedModalityContrastiveLoss"]
