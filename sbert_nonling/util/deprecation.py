"""Renamed public arguments and moved public names: the old name or import path keeps working for a while, with a
FutureWarning (as sentence-transformers deprecates its own renamed arguments)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def renamed_argument(owner: str, old_name: str, old_value: Any, new_name: str, new_value: Any, old_values: Mapping[Any, Any] | None = None) -> Any:
    """The value to use for ``new_name`` when a caller may still pass ``old_name``.

    Returns ``new_value`` when ``old_value`` is None. Otherwise warns (FutureWarning) that ``owner(old_name=...)`` is
    deprecated and returns ``old_value``, translated through ``old_values`` where the old name also had other values
    (e.g. ``head_activation="tanh"`` -> ``projection_head="mlp"``). Passing both names raises a ValueError.

    Example:
        ::

            from sbert_nonling.util.deprecation import renamed_argument

            class MyLoss:
                def __init__(self, image_dimension=None, image_dim=None):
                    self.image_dimension = renamed_argument("MyLoss", "image_dim", image_dim, "image_dimension", image_dimension)

            MyLoss(image_dim=2048).image_dimension  # 2048, with a FutureWarning: use image_dimension=...
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(f"{owner}: pass {new_name}=... only ({old_name}=... is its deprecated name), not both.")
    if old_values is not None:
        if old_value not in old_values:
            raise ValueError(f"{owner}: {old_name}={old_value!r} must be one of {list(old_values)}; use {new_name}=... instead.")
        translated = old_values[old_value]
        warnings.warn(f"{owner}({old_name}={old_value!r}) is deprecated: use {new_name}={translated!r}.", FutureWarning, stacklevel=3)
        return translated
    warnings.warn(f"{owner}({old_name}=...) is deprecated: use {new_name}=...", FutureWarning, stacklevel=3)
    return old_value


def moved_names(module_name: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` (PEP 562) for names that moved out of ``module_name``: ``moved`` maps each name
    to the module that now holds it; importing it from the old path warns (FutureWarning) and returns the new object.

    Example:
        ::

            from sbert_nonling.util.deprecation import moved_names

            __getattr__ = moved_names(__name__, {"loss_state_dict": "sbert_nonling.training.loss_state"})  # in the old module
            loss_state_dict = __getattr__("loss_state_dict")  # what `from old_module import loss_state_dict` gets: a FutureWarning
    """

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        warnings.warn(f"{module_name}.{name} moved to {moved[name]}.{name}.", FutureWarning, stacklevel=2)
        return getattr(importlib.import_module(moved[name]), name)

    return __getattr__
