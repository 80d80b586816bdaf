"""One writer per run folder: a run holds a lock on its output folder from its first check to its last write."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The lock file in a run folder; it holds the holder's process id, host, start time and command line.
LOCK_FILE = ".run.lock"


def _holder(descriptor: int) -> str:
    """The holder recorded in an open lock file, in words."""
    os.lseek(descriptor, 0, os.SEEK_SET)
    try:
        holder = json.loads(os.read(descriptor, 65536).decode("utf8"))
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder["started"]))
        return f"process {holder['pid']} on {holder['host']}, started {started}: {holder['command']}"
    except (ValueError, KeyError, TypeError):
        return "a process that has not yet recorded itself"


@contextmanager
def run_lock(output_dir: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of ``output_dir`` inside the block; another run asking for it meanwhile is refused with a
    ValueError naming the holder. An exclusive ``flock`` on :data:`LOCK_FILE`, which the kernel releases whenever the
    holder ends (even ``kill -9``); only the main process (``RANK`` 0) takes it.

    Args:
        output_dir: the run folder to lock (created if missing); the lock file lives inside it.
    """
    if int(os.environ.get("RANK", "0")) != 0:
        yield
        return
    path = Path(output_dir) / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(
                f"{output_dir} is in use by another run ({_holder(descriptor)}). Two runs writing one folder would "
                "replace each other's work: wait for that run to end, or choose another --output."
            ) from None
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.time(),
            "command": " ".join(sys.argv),
        }
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps(record).encode("utf8"), 0)
        try:
            yield
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
