"""Preprocess a batch column once when the next column holds the same inputs (SimCSE's (s, s), two views of a clip)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _same_inputs(inputs: list[Any], other: list[Any]) -> bool:
    """The same objects (e.g. one decoded audio clip in both view columns) or equal strings, item by item."""
    return len(inputs) == len(other) and all(
        item is other_item or (isinstance(item, str) and isinstance(other_item, str) and item == other_item)
        for item, other_item in zip(inputs, other)
    )


class ReuseIdenticalColumns:
    """Wraps a data collator's ``preprocess_fn``: a column whose inputs (and prompt / task / max_length) are those of
    the column before it, e.g. SimCSE's (s, s) or AudioCSE's two views of one clip, gets a copy of that column's
    (deterministic) features instead of a second preprocessing.
    :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` installs it; with another trainer:
    ``trainer.data_collator.preprocess_fn = ReuseIdenticalColumns(trainer.data_collator.preprocess_fn)``.

    Args:
        preprocess_fn: the collator's preprocessing, ``preprocess_fn(inputs, **kwargs) -> features``.
    """

    def __init__(self, preprocess_fn: Callable[..., dict[str, Any]]) -> None:
        self.preprocess_fn = preprocess_fn
        self._previous: tuple[list[Any], dict[str, Any], dict[str, Any]] | None = None

    def __call__(self, inputs: list[Any], **kwargs) -> dict[str, Any]:
        if self._previous is not None:
            previous_inputs, previous_kwargs, previous_features = self._previous
            if previous_kwargs == kwargs and _same_inputs(previous_inputs, inputs):
                return dict(previous_features)
        features = self.preprocess_fn(inputs, **kwargs)
        self._previous = (inputs, kwargs, dict(features))
        return features
