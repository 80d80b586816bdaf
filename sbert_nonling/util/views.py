"""One forward pass for several views of one kind of input (token batches, or front-end features of equal shapes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers.base.losses.merged_forward import merge_feature_batches
from torch import Tensor, nn


def _same_value(value: Any, other: Any) -> bool:
    if isinstance(value, Tensor) or isinstance(other, Tensor):
        return isinstance(value, Tensor) and isinstance(other, Tensor) and torch.equal(value, other)
    try:
        return bool(value == other)
    except (RuntimeError, ValueError, TypeError):
        return False


def _merge_equal_shapes(features_list: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Concatenate views whose tensors all have the same shape and the batch as their first axis; None otherwise."""
    first = features_list[0]
    rows = next((value.shape[0] for value in first.values() if isinstance(value, Tensor) and value.ndim >= 1), None)
    if rows is None or any(set(features) != set(first) for features in features_list[1:]):
        return None
    merged = {}
    for key, value in first.items():
        values = [features[key] for features in features_list]
        if isinstance(value, Tensor) and value.ndim >= 1:
            if value.shape[0] != rows or any(
                not isinstance(other, Tensor) or other.shape != value.shape for other in values[1:]
            ):
                return None
            merged[key] = torch.cat(values, dim=0)
        elif all(_same_value(value, other) for other in values[1:]):
            merged[key] = value
        else:
            return None
    return merged


def merge_views(features_list: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One feature dict holding all views (view 1's rows, then view 2's, ...), or None if they cannot be merged.

    Args:
        features_list: the preprocessed features of every view.
    """
    if len(features_list) < 2:
        return None
    return merge_feature_batches(features_list) or _merge_equal_shapes(features_list)


def forward_views(model: nn.Module, features_list: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model's output dict of every view, from one merged forward pass when the views allow it.

    Args:
        model: the model (or module) to run.
        features_list: the preprocessed features of every view.

    Example::

        from sbert_nonling.models import build_sentence_model, build_tiny_encoder
        from sbert_nonling.util.views import forward_views

        sentences = ["A man is playing a guitar.", "A woman slices an onion."]
        # offline: a tiny random encoder; e.g. "bert-base-uncased"
        model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32))).train()
        features = model.preprocess(sentences)
        outputs = forward_views(model, [features, features])  # two dropout views of one batch, one forward
        view_1, view_2 = (output["sentence_embedding"] for output in outputs)
    """
    features_list = list(features_list)
    merged = merge_views(features_list)
    if merged is None:
        return [model(features) for features in features_list]
    output = model(merged)
    views = len(features_list)
    total = output["sentence_embedding"].shape[0]
    split = {
        key: value.chunk(views, dim=0)
        if isinstance(value, Tensor) and value.ndim >= 1 and value.shape[0] == total
        else [value] * views
        for key, value in output.items()
    }
    return [{key: parts[index] for key, parts in split.items()} for index in range(views)]
