from __future__ import annotations

from sbert_nonling.modules.modality_router import MODALITY_ROUTES, ModalityRouter
from sbert_nonling.modules.shared_encoder import ENTRY_KEYS, SharedEncoder

__all__ = ["MODALITY_ROUTES", "ModalityRouter", "ENTRY_KEYS", "SharedEncoder"]
