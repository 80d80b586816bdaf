"""Trainer checkpoint folders: the completion marker listing their files, its check on resume, failed-write errors."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Written last into a checkpoint folder: only folders holding it are resumed from (a kill while saving leaves none).
#: It is a JSON object ``{"step": N, "files": {relative path: {"size": bytes, "sha256": hex}}}`` of every other file.
COMPLETE_MARKER = "checkpoint_complete"
CHECKPOINT_PREFIX = "checkpoint-"


class CheckpointWriteError(OSError):
    """Writing a checkpoint failed (disk full, no permission): the run stopped; earlier checkpoints are intact."""


def _sha256(path: Path, sync: bool = False) -> str:
    """The file's SHA-256; with ``sync``, its data is also flushed to the disk (fsync) first."""
    with path.open("rb") as file:
        if sync:
            os.fsync(file.fileno())
        return hashlib.file_digest(file, "sha256").hexdigest()


def _fsync_directory(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_complete_marker(folder: str | os.PathLike, step: int) -> None:
    """Mark ``folder`` complete: flush every file to the disk and record its size and SHA-256 in
    :data:`COMPLETE_MARKER`, written whole or not at all (a temporary file, fsync'ed and renamed into place).

    Args:
        folder: the checkpoint folder, every file of it written.
        step: the optimizer step the checkpoint holds, recorded in the marker.
    """
    folder = Path(folder)
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != COMPLETE_MARKER:
            files[path.relative_to(folder).as_posix()] = {
                "size": path.stat().st_size,
                "sha256": _sha256(path, sync=True),
            }
    temporary = folder / f".{COMPLETE_MARKER}.tmp"
    with temporary.open("w", encoding="utf8") as marker:
        json.dump({"step": step, "files": files}, marker, indent=1, sort_keys=True)
        marker.flush()
        os.fsync(marker.fileno())
    os.replace(temporary, folder / COMPLETE_MARKER)
    _fsync_directory(folder)


def remove_complete_marker(folder: str | os.PathLike) -> None:
    """Drop the marker of a folder about to be written again (a resumed run re-saving a step it had saved).

    Args:
        folder: the checkpoint folder.
    """
    marker = Path(folder) / COMPLETE_MARKER
    if marker.is_file():
        marker.unlink()
        _fsync_directory(marker.parent)


def checkpoint_damage(folder: str | os.PathLike) -> str | None:
    """None if every file the marker of ``folder`` lists is there with its recorded size and SHA-256, else a sentence
    naming the first file that is not (or the marker, if it is not a manifest).

    Args:
        folder: the checkpoint folder.
    """
    folder = Path(folder)
    try:
        files = json.loads((folder / COMPLETE_MARKER).read_text(encoding="utf8"))["files"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return f"{folder / COMPLETE_MARKER} is not a checkpoint manifest"
    for name, expected in files.items():
        path = folder / name
        if not path.is_file():
            return f"{path} is missing"
        size = path.stat().st_size
        if size != expected["size"]:
            return f"{path} has {size} bytes, {expected['size']} when it was written"
        if _sha256(path) != expected["sha256"]:
            return f"{path} does not have the SHA-256 recorded when it was written"
    return None


def complete_checkpoints(output_dir: str | os.PathLike) -> list[Path]:
    """The ``checkpoint-<step>`` folders of ``output_dir`` whose saving finished (holding a marker), newest step
    first.

    Args:
        output_dir: the trainer's output folder, holding ``checkpoint-<step>`` folders.
    """
    output_dir = Path(output_dir)
    steps = [
        (int(path.name[len(CHECKPOINT_PREFIX) :]), path)
        for path in (output_dir.iterdir() if output_dir.is_dir() else ())
        if path.name.startswith(CHECKPOINT_PREFIX)
        and path.name[len(CHECKPOINT_PREFIX) :].isdigit()
        and (path / COMPLETE_MARKER).is_file()
    ]
    return [path for _, path in sorted(steps, reverse=True)]


def last_complete_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The ``checkpoint-<step>`` folder of ``output_dir`` with the highest step whose saving finished, or None.

    Args:
        output_dir: the trainer's output folder, holding ``checkpoint-<step>`` folders.
    """
    complete = complete_checkpoints(output_dir)
    return str(complete[0]) if complete else None


def newest_intact_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The newest complete checkpoint of ``output_dir`` whose files match its marker (a damaged one is skipped with a
    warning), or None if none is complete; a ValueError names the damage if every complete checkpoint is damaged.

    Args:
        output_dir: the trainer's output folder, holding ``checkpoint-<step>`` folders.
    """
    damaged = []
    for folder in complete_checkpoints(output_dir):
        damage = checkpoint_damage(folder)
        if damage is None:
            return str(folder)
        logger.warning(f"Checkpoint {folder.name} is damaged ({damage}); resuming from an older checkpoint.")
        damaged.append(damage)
    if damaged:
        raise ValueError(
            f"No intact checkpoint to resume from in {output_dir}: {'; '.join(damaged)}. Start the run again without "
            "resume (with --overwrite / RunOptions(overwrite=True) to replace this folder)."
        )
    return None


def verify_checkpoint(folder: str | os.PathLike) -> None:
    """Check an explicitly named checkpoint to resume from as :func:`newest_intact_checkpoint` checks the ones it
    picks, and that it holds the optimizer and trainer states; a ValueError names what is wrong.

    Args:
        folder: the checkpoint folder named by ``resume_from_checkpoint``.
    """
    folder = Path(folder)
    where = f"resume_from_checkpoint={str(folder)!r}"
    if not folder.is_dir():
        raise ValueError(f"{where} is not a folder.")
    if not (folder / COMPLETE_MARKER).is_file():
        raise ValueError(
            f"{where} has no {COMPLETE_MARKER} marker: its saving never finished, or no CheckpointMarkerCallback "
            "wrote it. Resume from a complete checkpoint (resume_from_checkpoint=True picks the newest intact one)."
        )
    damage = checkpoint_damage(folder)
    if damage is not None:
        raise ValueError(f"{where} is damaged: {damage}. Resume from another checkpoint.")
    missing = [name for name in ("trainer_state.json", "optimizer.pt") if not (folder / name).is_file()]
    if missing:
        raise ValueError(
            f"{where} holds no {' and no '.join(missing)}: training would go on with a fresh optimizer (a model-only "
            "save). Resume from a full checkpoint."
        )


def write_failure(folder: str | os.PathLike, error: BaseException) -> CheckpointWriteError:
    """The error a run stops with when writing checkpoint ``folder`` failed with ``error``: it names the folder, the
    free space on its disk and the earlier complete checkpoints (untouched: rotation runs after the marker).

    Args:
        folder: the checkpoint folder being written.
        error: the error the write raised (e.g. ``OSError`` ENOSPC).
    """
    folder = Path(folder)
    existing = next(path for path in (folder, *folder.parents) if path.exists())  # the folder may not exist yet
    free = shutil.disk_usage(existing).free
    intact = [path.name for path in complete_checkpoints(folder.parent) if path != folder]
    if intact:
        kept = f"the earlier checkpoints ({', '.join(intact)}) are intact"
        how = "then run the same command again with --resume (RunOptions(resume=True))"
    else:
        kept = "there is no earlier checkpoint to resume from"
        how = "then run the same command again (without --resume: the run starts afresh)"
    return CheckpointWriteError(
        f"Could not write {folder}: {error}. {free / 2**20:.1f} MiB are free on that disk; {kept}. Free some space "
        f"(or fix the folder's permissions), {how}."
    )
