"""Training-only heads owned by losses (never part of the saved model): one vocabulary of head kinds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from torch import nn

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TrainingHead = Literal["mlp", "linear", "linear_gelu_layernorm", "none"]
TRAINING_HEADS: tuple[str, ...] = ("mlp", "linear", "linear_gelu_layernorm", "none")


def make_training_head(kind: TrainingHead, dimension: int, output_dimension: int | None = None, name: str = "training_head") -> nn.Module:
    """A training-only head from ``dimension`` to ``output_dimension`` (default: ``dimension``).

    ``"mlp"``: ``Linear + Tanh`` (SimCSE / VisualCSE's head on the pooled vector, MCSE's projection heads);
    ``"linear"``: ``Linear`` alone (MACD's projection heads); ``"linear_gelu_layernorm"``: ``Linear + GELU + LayerNorm``
    (Pixel Linguist's head on every patch token before mean pooling); ``"none"``: identity (no head; ``dimension``
    must then equal ``output_dimension``). The Linear is always the head's first module (state-dict key ``0.weight``).
    ``name`` is the caller's argument, named in the ValueError for an unknown kind.
    """
    output_dimension = dimension if output_dimension is None else output_dimension
    if kind == "mlp":
        return nn.Sequential(nn.Linear(dimension, output_dimension), nn.Tanh())
    if kind == "linear":
        return nn.Sequential(nn.Linear(dimension, output_dimension))
    if kind == "linear_gelu_layernorm":
        return nn.Sequential(nn.Linear(dimension, output_dimension), nn.GELU(), nn.LayerNorm(output_dimension))
    if kind == "none":
        if output_dimension != dimension:
            raise ValueError(f"A 'none' head keeps the dimension: {dimension} != {output_dimension}.")
        return nn.Identity()
    raise ValueError(f"{name}={kind!r} must be one of {list(TRAINING_HEADS)}.")


def embedding_dimension(model: SentenceTransformer) -> int:
    """``model``'s sentence embedding dimension, which every loss head is built for (a ValueError where the model has
    none: sentence-transformers types it ``int | None``)."""
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ValueError(f"{type(model).__name__} reports no sentence embedding dimension: the loss cannot size its head.")
    return dimension
