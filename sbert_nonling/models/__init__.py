from __future__ import annotations

from sbert_nonling.models.pixel_model import build_pixel_model
from sbert_nonling.models.sentence_model import POOLING_CHOICES, build_sentence_model
from sbert_nonling.models.tiny_encoder import (
    TINY_MODELS,
    build_tiny_clip,
    build_tiny_encoder,
    build_tiny_pixel,
    resolve_model,
)

__all__ = [
    "POOLING_CHOICES",
    "TINY_MODELS",
    "build_pixel_model",
    "build_sentence_model",
    "build_tiny_clip",
    "build_tiny_encoder",
    "build_tiny_pixel",
    "resolve_model",
]
