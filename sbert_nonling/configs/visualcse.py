"""VisualCSEConfig: SimCSE plus SupCon on unpaired images (Jian et al., 2022)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sbert_nonling.configs.base import setting
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.unpaired_modality import UnpairedModalityConfig


@dataclass
class VisualCSEConfig(UnpairedModalityConfig):
    """VisualCSE: defaults are the BERT-base row (ViT-B/16 in21k patch embedding, SupCon on 48 images a step with its
    own AdamW; text as SimCSE-unsup). Paper: https://arxiv.org/abs/2209.09433. See :class:`UnpairedModalityConfig`."""

    method: ClassVar[str] = "visualcse"

    vit: str | None = setting(
        "google/vit-base-patch16-224-in21k", "ViT whose patch embedding starts the image route (null: random)"
    )
    image_size: int = setting(224, "image side in pixels", minimum=1)
    patch_size: int = setting(16, "patch side in pixels (random patch embedding only)", minimum=1)
    images_per_class: int | None = setting(None, "images read per class folder (null: all)", minimum=1)

    #: A tiny run's images enter through a random patch embedding (no ViT offline).
    tiny_defaults: ClassVar[dict[str, Any]] = {**UnpairedModalityConfig.tiny_defaults, "vit": None}


register_method(
    MethodSpec(
        VisualCSEConfig,
        builder="sbert_nonling.methods.unpaired_modality:build_unpaired_modality",
        training_sources=("text_file", "nli_file", "image_dir"),
    )
)
