"""sbert-nonling: train sentence encoders with non-linguistic signal inside sentence-transformers.

The public names are imported on first use (:func:`~sbert_nonling.util.lazy_names.lazy_names`): importing the package
loads no torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert_nonling.util.lazy_names import lazy_names
from sbert_nonling.version import __version__

if TYPE_CHECKING:
    from sbert_nonling.export.text_model import export_text_model
    from sbert_nonling.losses.cached_unpaired_modality_contrastive import CachedUnpairedModalityContrastiveLoss
    from sbert_nonling.losses.dalr import DALRLoss
    from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
    from sbert_nonling.losses.listwise_distillation import ListwiseDistillationLoss
    from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
    from sbert_nonling.losses.simcse import SimCSELoss
    from sbert_nonling.losses.symmetric_info_nce import SymmetricInfoNCE
    from sbert_nonling.losses.teacher_guided_align import TeacherGuidedAlignLoss
    from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss
    from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
    from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed
    from sbert_nonling.modules.modality_router import ModalityRouter
    from sbert_nonling.modules.pixel_encoder import PixelEncoder
    from sbert_nonling.modules.pixel_renderer import PixelRenderer
    from sbert_nonling.modules.shared_encoder import SharedEncoder

#: The module that defines each public name.
_LAZY = {
    "AudioPatchEmbed": "sbert_nonling.modules.audio_patch_embed",
    "CachedUnpairedModalityContrastiveLoss": "sbert_nonling.losses.cached_unpaired_modality_contrastive",
    "DALRLoss": "sbert_nonling.losses.dalr",
    "DistillAnchorLoss": "sbert_nonling.losses.distill_anchor",
    "ImagePatchEmbed": "sbert_nonling.modules.image_patch_embed",
    "ListwiseDistillationLoss": "sbert_nonling.losses.listwise_distillation",
    "ModalityRouter": "sbert_nonling.modules.modality_router",
    "MultimodalAlignLoss": "sbert_nonling.losses.multimodal_align",
    "PixelEncoder": "sbert_nonling.modules.pixel_encoder",
    "PixelRenderer": "sbert_nonling.modules.pixel_renderer",
    "SharedEncoder": "sbert_nonling.modules.shared_encoder",
    "SimCSELoss": "sbert_nonling.losses.simcse",
    "SymmetricInfoNCE": "sbert_nonling.losses.symmetric_info_nce",
    "TeacherGuidedAlignLoss": "sbert_nonling.losses.teacher_guided_align",
    "UnpairedModalityContrastiveLoss": "sbert_nonling.losses.unpaired_modality_contrastive",
    "export_text_model": "sbert_nonling.export.text_model",
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "AudioPatchEmbed",
    "CachedUnpairedModalityContrastiveLoss",
    "DALRLoss",
    "DistillAnchorLoss",
    "ImagePatchEmbed",
    "ListwiseDistillationLoss",
    "ModalityRouter",
    "MultimodalAlignLoss",
    "PixelEncoder",
    "PixelRenderer",
    "SharedEncoder",
    "SimCSELoss",
    "SymmetricInfoNCE",
    "TeacherGuidedAlignLoss",
    "UnpairedModalityContrastiveLoss",
    "export_text_model",
    "__version__",
]
