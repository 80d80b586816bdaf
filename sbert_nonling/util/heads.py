"""Training-only projection heads owned by losses (never part of the saved model)."""

from __future__ import annotations

from typing import Literal

from torch import nn

TrainingHead = Literal["mlp", "none"]


def make_training_head(kind: TrainingHead, dimension: int) -> nn.Module:
    """``"mlp"``: SimCSE / VisualCSE's ``Linear(d, d) + Tanh`` on the pooled vector; ``"none"``: identity."""
    if kind == "mlp":
        return nn.Sequential(nn.Linear(dimension, dimension), nn.Tanh())
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"training_head={kind!r} must be 'mlp' or 'none'.")
