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
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").startswith("sbert_nonling.")
            ):
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name.startswith("sbert_nonling.")}
        graph.setdefault(source, set()).update(layer(target) for target in targets if layer(target) != source)
    return graph


def stated_layers() -> list[set[str]]:
    """The layers docs/architecture.md states, lowest first (``a / b`` on one rank: neither imports the other)."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"Layers, in the direction dependencies point: \*\*(.+?)\*\*", text)
    return [{name.strip() for name in rank.split("/")} for rank in line.split("→")]


def test_every_import_points_to_a_lower_layer():
    rank = {package: index for index, packages in enumerate(stated_layers()) for package in packages}
    graph = package_imports()
    assert set(graph) == set(rank), "docs/architecture.md names exactly the packages there are"
    upward = [
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if rank[target] >= rank[source]
    ]
    assert not upward, f"imports against the stated layers: {upward}"


def test_no_import_cycle_between_packages():
    graph = package_imports()
    assert {"training", "methods", "app", "losses", "modules"} <= set(graph)
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle between packages: {' -> '.join(error.args[1])}") from None
