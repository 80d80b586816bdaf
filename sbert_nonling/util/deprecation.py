"""Renamed public arguments: the old name keeps working for a while, with a FutureWarning (as sentence-transformers
deprecates its own renamed arguments)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any


def renamed_argument(
    owner: str, old_name: str, old_value: Any, new_name: str, new_value: Any, old_values: Mapping[Any, Any] | None = None
) -> Any:
    """The value to use for ``new_name`` when a caller may still pass ``old_name``.

    Returns ``new_value`` when ``old_value`` is None. Otherwise warns (FutureWarning) that ``owner(old_name=...)`` is
    deprecated and returns ``old_value``, translated through ``old_values`` where the old name also had other values
    (e.g. ``head_activation="tanh"`` -> ``projection_head="mlp"``). Passing both names raises a ValueError.

    Example:
        ::

            def __init__(self, image_dimension=None, image_dim=None):
                image_dimension = renamed_argument("MyLoss", "image_dim", image_dim, "image_dimension", image_dimension)
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(f"{owner}: pass {new_name}=... only ({old_name}=... is its deprecated name), not both.")
    if old_values is not None:
        if old_value not in old_values:
            raise ValueError(f"{owner}: {old_name}={old_value!r} must be one of {list(old_values)}; use {new_name}=... instead.")
        translated = old_values[old_value]
        warnings.warn(
            f"{owner}({old_name}={old_value!r}) is deprecated: use {new_name}={translated!r}.", FutureWarning, stacklevel=3
        )
        return translated
    warnings.warn(f"{owner}({old_name}=...) is deprecated: use {new_name}=...", FutureWarning, stacklevel=3)
    return old_value
