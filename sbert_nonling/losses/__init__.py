from __future__ import annotations

from sbert_nonling.losses.simcse import SimCSELoss

__all__ = ["SimCSELoss"]
