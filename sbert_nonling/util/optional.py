"""Optional dependencies: the pip extras of sbert-nonling (README.md) and the ImportError that names them."""

from __future__ import annotations

import importlib
from types import ModuleType

#: What each feature needs: the pip extra, the modules it imports, and the system packages it loads (Debian / Ubuntu).
EXTRAS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "pixel": (
        "pixel",
        ("cairocffi", "pangocffi", "pangocairocffi"),
        "libpango-1.0-0 libpangocairo-1.0-0 libpangoft2-1.0-0 libcairo2 libfontconfig1 libfreetype6 libharfbuzz0b",
    ),
    "plots": ("plots", ("matplotlib",), ""),
    "mteb": ("mteb", ("mteb",), ""),
}


def missing_extra_message(feature: str, purpose: str, error: BaseException) -> str:
    """The ImportError message for ``feature``'s extra: what failed, the pip command and any Debian / Ubuntu
    packages.

    Args:
        feature: a key of :data:`EXTRAS`.
        purpose: what needed the extra, e.g. ``"PixelRenderer"``.
        error: the ImportError or OSError of the failed import.
    """
    extra, _, system_packages = EXTRAS[feature]
    message = (
        f"{purpose} needs the optional dependencies of sbert-nonling[{extra}] ({error}). Install them with: "
        f"pip install 'sbert-nonling[{extra}]'"
    )
    if system_packages:
        message += (
            "; they load the system libraries Pango, Cairo, FreeType, HarfBuzz and fontconfig (Debian / Ubuntu: "
            f"apt-get install {system_packages})"
        )
    return message + "."


def require_extra(feature: str, purpose: str) -> list[ModuleType]:
    """Import the modules of ``feature`` (a key of :data:`EXTRAS`), or raise an ImportError naming the pip extra (and
    system packages); a native library that cannot be loaded (``OSError``) counts as missing.

    Args:
        feature: a key of :data:`EXTRAS`.
        purpose: what needs the extra, named in the message.
    """
    _, modules, _ = EXTRAS[feature]
    try:
        return [importlib.import_module(name) for name in modules]
    except (ImportError, OSError) as error:
        raise ImportError(missing_extra_message(feature, purpose, error)) from error
