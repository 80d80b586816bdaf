"""Input checks shared by the router, the data readers and the evaluators: one clear ValueError per bad item."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with unpaired surrogates replaced by U+FFFD (pairs joined), so tokenizers and renderers can encode
    it.

    Args:
        text: the text to clean.
    """
    if _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def split_lines(text: str) -> list[str]:
    """Lines of a text file's content, split at ``\\n`` only (``str.splitlines`` would also split at form feeds,
    U+0085, U+2028 and other characters that can sit inside a sentence, shifting every later line). A final empty line
    is dropped.

    Args:
        text: a file's whole content.
    """
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def read_lines(path: Path, what: str = "Data file") -> list[str]:
    """The lines (:func:`split_lines`) of a UTF-8 file, or a ValueError naming it (``what`` and path): missing or not
    UTF-8.

    Args:
        path: the file to read.
        what: how the error message names the file (e.g. ``"--text-file"``).
    """
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r} does not exist.")
    try:
        return split_lines(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not valid UTF-8 (byte {error.start}).") from None


def read_tab_rows(path: Path, min_columns: int, header_prefix: str | None = None) -> list[tuple[str, list[str]]]:
    """``("path:line", fields)`` of the non-blank lines of a TAB-separated file (a ``header_prefix`` first line
    skipped).

    Args:
        path: the file to read.
        min_columns: the fields a line must have; a shorter line is a ValueError naming it.
        header_prefix: the start of a header line to skip; None when the file has none.
    """
    rows = []
    for line_number, line in enumerate(read_lines(path), start=1):
        if not line.strip() or (line_number == 1 and header_prefix and line.startswith(header_prefix)):
            continue
        fields = line.split("\t")
        if len(fields) < min_columns:
            raise ValueError(
                f"{path}:{line_number}: expected at least {min_columns} TAB-separated columns, found {len(fields)}."
            )
        rows.append((f"{path}:{line_number}", fields))
    return rows


def check_sentence(sentence: Any, where: str) -> str:
    """Return ``sentence`` if it is a non-blank string, else raise a ValueError that names ``where`` it came from.

    Args:
        sentence: the value to check.
        where: how the error names its origin, e.g. ``"nli.csv:3"``.
    """
    if sentence is None:
        raise ValueError(f"{where} is None; expected a non-empty string.")
    if not isinstance(sentence, str):
        raise ValueError(f"{where} is a {type(sentence).__name__} ({sentence!r:.80}); expected a non-empty string.")
    if not sentence.strip():
        raise ValueError(f"{where} is empty or whitespace-only ({sentence!r}); expected a non-empty string.")
    return sentence


def check_text_inputs(inputs: Sequence[Any], source: str = "input") -> None:
    """Check that every item (or part of a pair) to encode is a ``str`` (blank is fine), naming the first bad index.

    Args:
        inputs: the items given to ``encode``: strings or pairs of strings.
        source: how the error names them (``"input"``: ``"input 3 is None"``).
    """
    for index, item in enumerate(inputs):
        parts = item if isinstance(item, (tuple, list)) else (item,)
        for part in parts:
            if part is None:
                raise ValueError(f"{source} {index} is None; expected a string.")
            if not isinstance(part, str):
                raise ValueError(f"{source} {index} holds a {type(part).__name__} ({part!r:.80}); expected a string.")


def check_export_target(path: str | Path, overwrite: bool = False) -> bool:
    """Check a folder a model is to be written into: a ValueError when it is a file, or a folder holding files without
    ``overwrite``. Returns whether it holds files (to be replaced). Imports nothing heavy, so the CLI checks it first.

    Args:
        path: the folder (it need not exist).
        overwrite: whether what the folder holds may be replaced.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"Export target {str(path)!r} is a file, not a folder; choose a folder (it is created if missing)."
        )
    holds_files = path.is_dir() and any(path.iterdir())
    if holds_files and not overwrite:
        raise ValueError(
            f"Export folder {str(path)!r} is not empty; choose another folder, or pass --overwrite (overwrite=True) "
            "to replace what it holds."
        )
    return holds_files
