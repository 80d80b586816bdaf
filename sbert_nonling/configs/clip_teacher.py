"""CLIPTeacherConfig: the settings of the methods whose caption batches carry a frozen CLIP's embeddings (KDMCSE,
DALR)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sbert_nonling.configs.base import setting
from sbert_nonling.configs.sentence_encoder import SingleRunConfig


@dataclass
class CLIPTeacherConfig(SingleRunConfig):
    """A single run on sentence and caption batches whose captions carry a frozen CLIP teacher's embeddings of their
    image and of themselves, computed once before training (``clip_encoder``), or read from a features file made by
    ``sbert-nonling features --encoder clip-vit-large-patch14 --captions FILE``; see :class:`SingleRunConfig`."""

    clip_encoder: str = setting(
        "clip-vit-large-patch14",
        "frozen CLIP teacher: clip-vit-large-patch14, clip-vit-base-patch32, a Hub name, a folder or tiny:clip",
    )
    clip_dimension: int = setting(768, "dimension of the CLIP embeddings", minimum=1)

    #: A tiny run's CLIP teacher is a small random CLIP built offline from the training captions (``tiny:clip``).
    tiny_defaults: ClassVar[dict[str, Any]] = {**SingleRunConfig.tiny_defaults, "clip_encoder": "tiny:clip"}
