"""sbert-nonling: train sentence encoders with non-linguistic signal inside sentence-transformers."""

from __future__ import annotations

from sbert_nonling.export.text_model import export_text_model
from sbert_nonling.losses.cached_unpaired_modality_contrastive import CachedUnpairedModalityContrastiveLoss
from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.symmetric_info_nce import SymmetricInfoNCE
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss
from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed
from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.modules.pixel_renderer import PixelRenderer
from sbert_nonling.modules.shared_encoder import SharedEncoder
from sbert_nonling.version import __version__

__all__ = [
    "AudioPatchEmbed",
    "CachedUnpairedModalityContrastiveLoss",
    "DistillAnchorLoss",
    "ImagePatchEmbed",
    "ModalityRouter",
    "MultimodalAlignLoss",
    "PixelEncoder",
    "PixelRenderer",
    "SharedEncoder",
    "SimCSELoss",
    "SymmetricInfoNCE",
    "UnpairedModalityContrastiveLoss",
    "export_text_model",
    "__version__",
]
