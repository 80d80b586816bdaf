"""Visual STS: STS pairs rendered as images and encoded through a model's image route (text read by vision)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from sbert_nonling.evaluation.sts_data import STSData
from sbert_nonling.modules.pixel_renderer import PixelRenderer


def render_as_image(renderer: PixelRenderer, sentence: str) -> Image.Image:
    """``sentence`` as PIXEL renders it, wrapped at patch boundaries into a square RGB grid (64 patches -> 128 x 128
    px).

    Args:
        renderer: the pixel renderer (its ``max_patches`` sets the grid: a square of at least that many patches).
        sentence: the sentence to render.
    """
    strip, _ = renderer.render(sentence)
    side = int(np.ceil(np.sqrt(renderer.max_patches)))
    patch = renderer.patch_size
    padded = np.full((patch, side * side * patch), 255, dtype=np.uint8)
    padded[:, : strip.shape[1]] = strip
    rows = [padded[:, row * side * patch : (row + 1) * side * patch] for row in range(side)]
    return Image.fromarray(np.concatenate(rows, axis=0)).convert("RGB")


def evaluate_visual_sts(
    model: SentenceTransformer, tasks: Sequence[STSData], max_patches: int = 64, batch_size: int = 32
) -> dict[str, float]:
    """Cosine Spearman x100 per task (``Visual<task>``) and ``"avg"``, the sentences rendered by
    :func:`render_as_image` and encoded through the model's "image" route, as in MTEB's VisualSTS tasks.

    Args:
        model: a model with an "image" route (a :class:`~sbert_nonling.modules.modality_router.ModalityRouter` first).
        tasks: the STS tasks.
        max_patches: the patches of the rendered strip (64 patches -> a 128 x 128 image).
        batch_size: images per ``encode`` batch.
    """
    router = model[0]
    if "image" not in getattr(router, "sub_modules", {}):
        raise ValueError(
            "visual-sts encodes rendered sentences as images: the model needs an 'image' route (VisualCSE)."
        )
    renderer = PixelRenderer(max_patches=max_patches)
    scores: dict[str, float] = {}
    for task in tasks:
        # typed list[str] by sentence-transformers, but handed to model.encode, which takes images
        images1: list[Any] = [render_as_image(renderer, sentence) for sentence in task.sentences1]
        images2: list[Any] = [render_as_image(renderer, sentence) for sentence in task.sentences2]
        evaluator = EmbeddingSimilarityEvaluator(
            images1,
            images2,
            task.scores,
            batch_size=batch_size,
            main_similarity="cosine",
            name=f"Visual{task.name}",
            write_csv=False,
        )
        scores[f"Visual{task.name}"] = 100.0 * evaluator(model)[evaluator.primary_metric]
    scores["avg"] = sum(scores.values()) / len(scores)
    return scores
