"""Training-only projection heads owned by losses (never part of the saved model)."""

from __future__ import annotations

from typing import Literal

from torch import nn

TrainingHead = Literal["mlp", "linear_gelu_layernorm", "none"]
TRAINING_HEADS: tuple[str, ...] = ("mlp", "linear_gelu_layernorm", "none")


def make_training_head(kind: TrainingHead, dimension: int) -> nn.Module:
    """``"mlp"``: SimCSE / VisualCSE's ``Linear(d, d) + Tanh`` on the pooled vector; ``"linear_gelu_layernorm"``:
    Pixel Linguist's ``Linear(d, d) + GELU + LayerNorm(d)`` on every patch token before mean pooling; ``"none"``:
    identity."""
    if kind == "mlp":
        return nn.Sequential(nn.Linear(dimension, dimension), nn.Tanh())
    if kind == "linear_gelu_layernorm":
        return nn.Sequential(nn.Linear(dimension, dimension), nn.GELU(), nn.LayerNorm(dimension))
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"training_head={kind!r} must be one of {list(TRAINING_HEADS)}.")
