"""Input checks shared by the router, the data readers and the evaluators: one clear ValueError per bad item."""

from __future__ import annotations

import json
import re
import struct
import tempfile
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


def check_not_empty(path: str | Path, what: str) -> None:
    """A ValueError naming a file in which no line holds text (an empty file: a failed copy, a wrong file), read as
    the data readers read it (:func:`read_lines`). Imports nothing heavy, so the CLI checks it first.

    Args:
        path: the file.
        what: how the message names it (``"--text-file"``).
    """
    if not any(line.strip() for line in read_lines(Path(path), what)):
        raise ValueError(f"{what} {str(path)!r} is empty (no line holds text); give a file with data.")


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


def check_writable(path: str | Path, named_by: str) -> Path:
    """Check, without creating ``path``, that it could be written: a ValueError names it when a file stands where a
    folder on its way must be, or when its nearest existing folder cannot be written (no permission, a read-only
    disk: tried with an unnamed temporary file, so it holds for root too). Imports nothing heavy.

    Args:
        path: the file or folder to be written (it need not exist).
        named_by: how the message names it (``"--output"``, ``"the output argument"``).
    """
    path = Path(path)
    nearest = next(folder for folder in (path, *path.absolute().parents) if folder.exists())
    if nearest != path and not nearest.is_dir():
        raise ValueError(f"Cannot write into {named_by} {str(path)!r}: {nearest} is a file, not a folder.")
    folder = nearest if nearest.is_dir() else nearest.parent
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        raise ValueError(
            f"Cannot write into {named_by} {str(path)!r} ({error.strerror or error}); choose a folder you can write "
            "to, or fix its permissions."
        ) from None
    return path


def check_file_target(path: str | Path, named_by: str, overwrite: bool = False) -> Path:
    """Check a file that a command is to write: a ValueError when it is a folder, when it exists and ``overwrite`` is
    not set (its content may have cost hours, e.g. extracted features), or when it cannot be written
    (:func:`check_writable`). Imports nothing heavy, so the CLI checks it first.

    Args:
        path: the file (it need not exist).
        named_by: how the message names it (``"--output"``).
        overwrite: whether an existing file may be replaced.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{named_by} {str(path)!r} is a folder; it takes a file.")
    if path.exists() and not overwrite:
        raise ValueError(
            f"{named_by} {str(path)!r} already exists; choose another file, or pass --overwrite (overwrite=True) to "
            "replace it."
        )
    return check_writable(path, named_by)


def check_export_target(path: str | Path, overwrite: bool = False) -> bool:
    """Check a folder a model is to be written into: a ValueError when it is a file, a folder holding files without
    ``overwrite``, or cannot be written (:func:`check_writable`). Returns whether it holds files (to be replaced).
    Imports nothing heavy, so the CLI checks it first.

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
    check_writable(path, "the export folder")
    return holds_files


def check_dry_run_target(path: str | Path) -> Path:
    """Check the folder a Hub upload is written to instead of being sent (``push --dry-run DIR``): a ValueError when it
    is a file, holds files, or cannot be written (:func:`check_writable`). Imports nothing heavy.

    Args:
        path: the folder (new or empty).
    """
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ValueError(f"The dry-run folder {str(path)!r} already holds files; give a new or empty folder.")
    return check_writable(path, "the dry-run folder")


def check_safetensors_file(path: str | Path, named_by: str, remedy: str) -> dict[str, Any]:
    """Check that ``path`` is a whole safetensors file without loading it (no torch): its header is read and every
    tensor's bytes must lie inside the file. A truncated or corrupt file (a copy cut short, another format) raises one
    ValueError naming the file, what is wrong and ``remedy``, where safetensors itself would say only "header too
    large". Returns the header (tensor name -> dtype / shape / offsets, ``__metadata__``).

    Args:
        path: the file.
        named_by: how the message names it (``"--image-features"``).
        remedy: how to get a good file, e.g. ``"extract it again with sbert-nonling features"``.
    """
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as file:
        prefix = file.read(8)
        length = struct.unpack("<Q", prefix)[0] if len(prefix) == 8 else None
        raw = file.read(length) if length is not None and 8 + length <= size else b""
    problem = ""
    header: dict[str, Any] = {}
    if length is None or 8 + length > size:
        problem = f"its header does not fit in its {size} bytes"
    else:
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            problem = "its header is not safetensors' JSON"
    if not problem and not isinstance(header, dict):
        problem = "its header is not safetensors' JSON"
    if not problem and length is not None:
        ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
        needed = 8 + length + max(ends, default=0)
        if needed > size:
            problem = f"its tensors need {needed} bytes and it holds {size}"
    if problem:
        raise ValueError(
            f"{named_by} {str(path)!r} is not a whole safetensors file ({problem}: cut short or not safetensors); "
            f"{remedy}."
        )
    return header
