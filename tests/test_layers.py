"""The packages of sbert_nonling import one another one way: no cycle, counting every import (module-level, inside
functions, relative, and the names a package's ``__init__`` imports on first use); no package imports the top-level
``sbert_nonling`` (``from sbert_nonling import X``), which re-exports names from every package."""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sbert_nonling"
#: The layer of the top-level package (its ``__init__`` re-exports public names of every package): above them all.
TOP = "sbert_nonling"


def layer(module: str) -> str:
    """The package of ``sbert_nonling.<package>.<module>`` (a top-level module is its own layer, and
    ``sbert_nonling`` itself is :data:`TOP`)."""
    return module.split(".")[1] if module.count(".") else module


def imported_modules(path: Path, package: Path) -> set[str]:
    """The ``sbert_nonling`` modules the file at ``path`` (inside ``package``) imports, as absolute names: relative
    imports resolved against the file's package, ``from sbert_nonling.x import y`` read as ``sbert_nonling.x.y`` when
    ``y`` is a module, and the module names a package ``__init__`` lists as strings (imported on first use)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    here = parts[:-1]  # the package a relative import starts from (for an __init__, its own)
    text = path.read_text(encoding="utf-8")
    modules = set(re.findall(r"\"(sbert_nonling\.[a-z_.]+)\"", text)) if parts[-1] == "__init__" else set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names if alias.name.split(".")[0] == TOP}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x: this package; from .. import x: its parent
                anchor = list(here[: len(here) - node.level + 1])
                base = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                base = node.module or ""
            if base.split(".")[0] != TOP:
                continue
            for alias in node.names:
                submodule = package.parent.joinpath(*base.split("."), alias.name)
                is_module = submodule.is_dir() or submodule.with_suffix(".py").is_file()
                modules.add(f"{base}.{alias.name}" if is_module else base)
    return modules


def package_imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Package -> the other packages it imports (:data:`TOP` among them for ``from sbert_nonling import X``)."""
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) == 2:
            continue  # sbert_nonling/__init__.py re-exports the public names: the top, above every package
        source = layer(".".join(parts))
        targets = {layer(module) for module in imported_modules(path, package)}
        graph.setdefault(source, set()).update(target for target in targets if target != source)
    return graph


def stated_layers() -> list[set[str]]:
    """The layers docs/architecture.md states, lowest first (``a / b`` on one rank: neither imports the other)."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"Layers, in the direction dependencies point: \*\*(.+?)\*\*", text)
    return [{name.strip() for name in rank.split("/")} for rank in line.split("→")]


def upward_imports(graph: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """Every import in ``graph`` of a package on the same or a higher rank of ``layers`` (:data:`TOP` is above all)."""
    rank = {package: index for index, packages in enumerate(layers) for package in packages}
    rank[TOP] = len(layers)
    return sorted(
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if rank[target] >= rank[source]
    )


def test_every_import_points_to_a_lower_layer():
    layers = stated_layers()
    graph = package_imports()
    assert set(graph) == set().union(*layers), "docs/architecture.md names exactly the packages there are"
    assert not upward_imports(graph, layers), f"imports against the stated layers: {upward_imports(graph, layers)}"


def test_no_import_cycle_between_packages():
    graph = package_imports()
    assert {"training", "methods", "app", "losses", "modules"} <= set(graph)
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle between packages: {' -> '.join(error.args[1])}") from None


def test_relative_and_top_level_imports_in_a_lower_layer_are_caught(tmp_path):
    package = tmp_path / "sbert_nonling"
    files = {
        "__init__.py": "",
        "util/__init__.py": "",
        "util/relative.py": "def build():\n    from ..modules import front\n",  # util -> modules, relative
        "util/top.py": "from sbert_nonling import FrontEnd\n",  # util -> the top-level package
        "modules/__init__.py": "from . import front\n",
        "modules/front.py": "from .. import util\nfrom sbert_nonling.util import top\n",  # downward: allowed
    }
    for name, source in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(source, encoding="utf-8")
    graph = package_imports(package)
    assert graph == {"util": {"modules", TOP}, "modules": {"util"}}
    assert upward_imports(graph, [{"util"}, {"modules"}]) == ["util imports modules", f"util imports {TOP}"]
