"""A package's public names imported on first use (PEP 562), so importing the package loads none of their modules."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], names: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` (its ``globals()`` is ``namespace``) for
    ``names`` (public name -> defining module): a name is imported when first looked up, then kept in ``namespace``.

    Args:
        package: the package's name, for the AttributeError of an unknown name.
        namespace: the package's ``globals()``, where imported names are kept.
        names: public name -> the module that defines it.

    Example::

        import types
        from sbert_nonling.util.lazy_names import lazy_names

        package = types.ModuleType("example")
        package.__getattr__, package.__dir__ = lazy_names("example", vars(package), {"dedent": "textwrap"})
        print(package.dedent("    text"))  # textwrap is imported here: text
    """

    def getattr_(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(names[name]), name)
        namespace[name] = value  # later look-ups skip __getattr__
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *names})

    return getattr_, dir_
