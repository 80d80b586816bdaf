from __future__ import annotations

from sbert_nonling.losses.cached_unpaired_modality_contrastive import CachedUnpairedModalityContrastiveLoss
from sbert_nonling.losses.dalr import DALRLoss
from sbert_nonling.losses.damsm import DAMSMLoss
from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
from sbert_nonling.losses.head_layer import HeadLayer
from sbert_nonling.losses.listwise_distillation import ListwiseDistillationLoss
from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
from sbert_nonling.losses.pair_classification import PairClassificationLoss
from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.sts_regression import STSRegressionLoss
from sbert_nonling.losses.symmetric_info_nce import SymmetricInfoNCE
from sbert_nonling.losses.teacher_guided_align import TeacherGuidedAlignLoss
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss

__all__ = [
    "CachedUnpairedModalityContrastiveLoss",
    "DALRLoss",
    "DAMSMLoss",
    "DistillAnchorLoss",
    "HeadLayer",
    "ListwiseDistillationLoss",
    "MultimodalAlignLoss",
    "PairClassificationLoss",
    "STSRegressionLoss",
    "SentenceClassificationLoss",
    "SimCSELoss",
    "SymmetricInfoNCE",
    "TeacherGuidedAlignLoss",
    "UnpairedModalityContrastiveLoss",
]
