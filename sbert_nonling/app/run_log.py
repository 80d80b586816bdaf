"""A run's ``train.log``: the INFO logs of this package and of sentence-transformers, for Python callers as for the
CLI."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The loggers whose INFO records a run's ``train.log`` keeps.
LOGGED_PACKAGES = ("sbert_nonling", "sentence_transformers")


@contextmanager
def run_log(path: str | Path) -> Iterator[None]:
    """Inside the block, also append the INFO records of :data:`LOGGED_PACKAGES` to ``path``; the console keeps its
    own level (a logger's records reach the root handlers only at the level those are set to).

    Args:
        path: the log file, appended to (each run adds its own lines).

    Example::

        import logging
        from sbert_nonling.app.run_log import run_log

        with run_log("train.log"):
            logging.getLogger("sbert_nonling.app").info("written to train.log, not to the console")
    """
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in LOGGED_PACKAGES]
    levels = [package_logger.level for package_logger in loggers]
    for package_logger in loggers:
        package_logger.addHandler(handler)
        package_logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for package_logger, level in zip(loggers, levels):
            package_logger.removeHandler(handler)
            package_logger.setLevel(level)
        with contextlib.suppress(OSError):  # a log that cannot be flushed (full disk) must not hide the run's error
            handler.close()
