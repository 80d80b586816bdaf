"""option_field: a dataclass field that the command line turns into a flag."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def option_field(default: Any, flag: str, help: str, folder: bool | None = None) -> Any:
    """A field of an options object (``RunOptions``, ``DataSources``) with what the command line needs to make its
    flag: the metadata ``flag`` and ``help`` and, for a path, whether it names a ``folder`` (a file otherwise; None:
    not a path). What it adds to ``dataclasses.field``: one declaration shape for every option, read by
    ``sbert_nonling.cli``.

    Args:
        default: the value when the option is not given (immutable: None, a bool, a tuple).
        flag: the command-line flag, e.g. ``"--text-file"``.
        help: the flag's help, one line.
        folder: for a path option, whether it names a folder (True) or a file (False); None for any other option.

    Example::

        import dataclasses
        from dataclasses import dataclass

        from sbert_nonling.util.option_field import option_field

        @dataclass
        class Options:
            text_file: str | None = option_field(None, "--text-file", "one sentence per line", folder=False)

        (item,) = dataclasses.fields(Options)
        print(item.metadata["flag"], item.metadata["folder"])  # --text-file False
    """
    metadata: dict[str, Any] = {"flag": flag, "help": help}
    if folder is not None:
        metadata["folder"] = folder
    return field(default=default, metadata=metadata)
