from __future__ import annotations

from sbert_nonling.export.text_model import export_text_model

__all__ = ["export_text_model"]
