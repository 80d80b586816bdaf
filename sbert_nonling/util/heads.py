"""Training-only heads owned by losses (never part of the saved model): one vocabulary of head kinds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from sbert_nonling.util.choices import TrainingHead

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TRAINING_HEADS: tuple[str, ...] = ("mlp", "linear", "linear_gelu_layernorm", "none")


def make_training_head(
    kind: TrainingHead, dimension: int, output_dimension: int | None = None, name: str = "training_head"
) -> nn.Module:
    """A training-only head from ``dimension`` to ``output_dimension`` (default: ``dimension``).

    ``"mlp"``: Linear + Tanh (SimCSE, VisualCSE, MCSE); ``"linear"`` (MACD); ``"linear_gelu_layernorm"`` (Pixel
    Linguist); ``"none"``: identity. The Linear is the first module (``0.weight``); ``name`` is named in the
    ValueError.

    Args:
        kind: ``"mlp"``, ``"linear"``, ``"linear_gelu_layernorm"`` or ``"none"``.
        dimension: the input width (the model's embedding dimension).
        output_dimension: the output width; None keeps ``dimension``.
        name: the setting's name in the ValueError of an unknown ``kind``.
    """
    output_dimension = dimension if output_dimension is None else output_dimension
    if kind not in TRAINING_HEADS:
        raise ValueError(f"{name}={kind!r} must be one of {list(TRAINING_HEADS)}.")
    if kind == "none":
        if output_dimension != dimension:
            raise ValueError(f"A 'none' head keeps the dimension: {dimension} != {output_dimension}.")
        return nn.Identity()
    linear = nn.Linear(dimension, output_dimension)
    if kind == "mlp":
        return nn.Sequential(linear, nn.Tanh())
    if kind == "linear":
        return nn.Sequential(linear)
    return nn.Sequential(linear, nn.GELU(), nn.LayerNorm(output_dimension))


def embedding_dimension(model: SentenceTransformer) -> int:
    """``model``'s sentence embedding dimension, which loss heads are built for (a ValueError if it reports none).

    Args:
        model: the model.
    """
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ValueError(
            f"{type(model).__name__} reports no sentence embedding dimension: the loss cannot size its head."
        )
    return dimension
