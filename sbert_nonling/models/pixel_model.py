"""Assemble a text-as-pixels SentenceTransformer: render, PIXEL encoder, mean over patches, L2 normalisation."""

from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.modules.pixel_encoder import PIXEL_BASE, PixelEncoder
from sbert_nonling.modules.pixel_renderer import PixelRenderer
from sbert_nonling.util.model_card_data import NonLinguisticModelCardData


def build_pixel_model(
    encoder: str | PixelEncoder = PIXEL_BASE,
    max_patches: int = 64,
    renderer_kwargs: dict[str, Any] | None = None,
) -> SentenceTransformer:
    """``SentenceTransformer([ModalityRouter({"pixel": [PixelRenderer, PixelEncoder]}), Pooling(mean), Normalize])``.

    Pixel Linguist's sentence encoder: "pixel" is the router's default route, so
    ``model.encode(sentences)`` reads text as pixels; the training-only head belongs to the loss
    (``SymmetricInfoNCE(model, token_head="linear_gelu_layernorm")``).

    Args:
        encoder: a PIXEL checkpoint (Hub name such as ``Team-PIXEL/pixel-base`` or folder), or a PixelEncoder.
        max_patches: patches per rendered sentence (Pixel Linguist: 64), the same as a given PixelEncoder's.
        renderer_kwargs: other :class:`PixelRenderer` arguments (font, font size, dpi).

    Example:
        ::

            from sbert_nonling import PixelEncoder
            from sbert_nonling.models import build_pixel_model

            # offline: a small random PIXEL-architecture encoder;
            # e.g. build_pixel_model("Team-PIXEL/pixel-base", max_patches=64)
            encoder = PixelEncoder.from_config(
                max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
            )
            model = build_pixel_model(encoder, max_patches=16)
            model.encode(["A man is playing a guitar."])  # (1, 32), unit length; (1, 768) with PIXEL-base
    """
    if isinstance(encoder, str):
        encoder = PixelEncoder.from_pretrained(encoder, max_patches=max_patches)
    elif encoder.max_patches != max_patches:
        raise ValueError(
            f"The PixelEncoder reads {encoder.max_patches} patches but max_patches={max_patches}; build both with the "
            "same number."
        )
    renderer = PixelRenderer(max_patches=max_patches, **(renderer_kwargs or {}))
    router = ModalityRouter({"pixel": [renderer, encoder]}, default_route="pixel")
    return SentenceTransformer(
        modules=[router, Pooling(encoder.get_embedding_dimension(), pooling_mode="mean"), Normalize()],
        model_card_data=NonLinguisticModelCardData(local_files_only=True),
    )
