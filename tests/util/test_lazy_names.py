"""lazy_names: a package's public names imported on first use, kept, listed; unknown names raise AttributeError."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from sbert_nonling.util.lazy_names import lazy_names


def test_a_name_is_imported_on_first_use_and_kept():
    package = types.ModuleType("example")
    package.__getattr__, package.__dir__ = lazy_names("example", vars(package), {"dedent": "textwrap"})
    assert "dedent" not in vars(package) and "dedent" in dir(package)
    assert package.dedent("  a") == "a" and "dedent" in vars(package)
    with pytest.raises(AttributeError, match="module 'example' has no attribute 'indent'"):
        package.indent  # noqa: B018


def test_importing_the_package_loads_no_heavy_library_and_its_names_still_import():
    script = (
        "import sys, sbert_nonling, sbert_nonling.app\n"
        "print(sorted(name for name in ('torch', 'sentence_transformers') if name in sys.modules))\n"
        "from sbert_nonling import SimCSELoss\n"
        "from sbert_nonling.app import list_recipes\n"
        "print(SimCSELoss.__module__, list_recipes.__module__)\n"
    )
    lines = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert lines == ["[]", "sbert_nonling.losses.simcse sbert_nonling.app.recipes"]
