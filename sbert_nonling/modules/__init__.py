from __future__ import annotations

from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
from sbert_nonling.modules.band_masking import BandMasking
from sbert_nonling.modules.front_end import FrontEnd
from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed
from sbert_nonling.modules.modality_router import MODALITY_ROUTES, ModalityRouter
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.modules.pixel_renderer import PixelRenderer
from sbert_nonling.modules.shared_encoder import ENTRY_KEYS, SharedEncoder

__all__ = [
    "AudioPatchEmbed",
    "BandMasking",
    "ENTRY_KEYS",
    "FrontEnd",
    "ImagePatchEmbed",
    "MODALITY_ROUTES",
    "ModalityRouter",
    "PixelEncoder",
    "PixelRenderer",
    "SharedEncoder",
]
