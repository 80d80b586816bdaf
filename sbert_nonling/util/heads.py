"""Training-only heads owned by losses (never part of the saved model): one vocabulary of head kinds."""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING

from torch import nn

from sbert_nonling.util.choices import TrainingHead

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TRAINING_HEADS: tuple[str, ...] = typing.get_args(TrainingHead)


def make_training_head(
    kind: TrainingHead, dimension: int, output_dimension: int | None = None, name: str = "training_head"
) -> nn.Module:
    """A training-only head from ``dimension`` to ``output_dimension`` (default: ``dimension``).

    ``"mlp"``: Linear + Tanh (SimCSE, VisualCSE, MCSE); ``"linear"`` (MACD); ``"linear_gelu_layernorm"`` (Pixel Linguist);
    ``"none"``: identity. The Linear is the first module (``0.weight``); ``name`` is named in the ValueError.
    """
    output_dimension = dimension if output_dimension is None else output_dimension
    if kind not in TRAINING_HEADS:
        raise ValueError(f"{name}={kind!r} must be one of {list(TRAINING_HEADS)}.")
    if kind == "none":
        if output_dimension != dimension:
            raise ValueError(f"A 'none' head keeps the dimension: {dimension} != {output_dimension}.")
        return nn.Identity()
    after = {
        "mlp": (nn.Tanh,),
        "linear": (),
        "linear_gelu_layernorm": (nn.GELU, lambda: nn.LayerNorm(output_dimension)),
    }[kind]
    return nn.Sequential(nn.Linear(dimension, output_dimension), *(layer() for layer in after))


def embedding_dimension(model: SentenceTransformer) -> int:
    """``model``'s sentence embedding dimension, which loss heads are built for (a ValueError if it reports none)."""
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ValueError(
            f"{type(model).__name__} reports no sentence embedding dimension: the loss cannot size its head."
        )
    return dimension
