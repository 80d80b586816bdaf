"""The packages of sbert_nonling import one another one way: no cycle, counting every import (module-level, inside
functions, and the names a package's ``__init__`` imports on first use)."""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sbert_nonling"


def layer(module: str) -> str:
    """The package of ``sbert_nonling.<package>.<module>`` (a top-level module is its own layer)."""
    return module.split(".")[1] if module.count(".") else module


def package_imports() -> dict[str, set[str]]:
    """Package -> the other packages it imports."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) == 2:
            continue  # sbert_nonling/__init__.py re-exports the public names: the top, above every package
        source = layer(".".join(parts))
        text = path.read_text(encoding="utf-8")
        targets = set(re.findall(r"\"(sbert_nonling\.[a-z_.]+)\"", text)) if parts[-1] == "__init__" else set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("sbert_nonling."):
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name.startswith("sbert_nonling.")}
        graph.setdefault(source, set()).update(layer(target) for target in targets if layer(target) != source)
    return graph


def test_no_import_cycle_between_packages():
    graph = package_imports()
    assert {"training", "methods", "app", "losses", "modules"} <= set(graph)
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle between packages: {' -> '.join(error.args[1])}") from None
    assert order.index("training") < order.index("methods") < order.index("app")  # library below, application on top
    assert "app" not in graph["training"] | graph["methods"]
