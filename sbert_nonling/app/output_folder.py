"""A run's output folder: a new run never replaces an earlier one by accident, and resume needs something to resume."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sbert_nonling.training.checkpoints import COMPLETE_MARKER
from sbert_nonling.util.validation import check_writable

logger = logging.getLogger(__name__)

#: What the recipe runners write into a run folder; a run that replaces another replaces these and nothing else
#: (``train.log`` is appended to by every run), results.json last.
RUN_ENTRIES = (
    "model",
    "export",
    "model.partial",
    "export.partial",
    "checkpoints",
    "stages",
    "image_features.safetensors",
    "recipe.json",
    "results.json",
)
#: A folder holding any of these holds a finished run (a saved model or its results).
FINISHED_RUN_ENTRIES = ("results.json", "model", "export")


def check_output_target(output_dir: str | Path) -> Path:
    """Check, without creating anything, that ``output_dir`` names a folder that exists or can be created: a ValueError
    says so when it names a file or when its nearest existing folder cannot be written (:func:`check_writable`).

    Args:
        output_dir: the run folder (``--output``); it may not exist yet.
    """
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(
            f"--output {str(output_dir)!r} is a file, not a folder; choose a folder (it is created if missing)."
        )
    return check_writable(output_dir, "--output")


def make_output_dir(output_dir: str | Path) -> Path:
    """Create the run folder ``output_dir`` if needed and check that it can be written, before a run reads any
    data: a ValueError says so when it names a file or cannot be written (no permission, a read-only disk).

    Args:
        output_dir: the run folder (``--output``), created with its parents if missing.
    """
    output_dir = check_output_target(output_dir)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=output_dir).close()
    except OSError as error:
        raise ValueError(
            f"Cannot write into --output {str(output_dir)!r} ({error.strerror or error}); choose a folder you can "
            "write to, or fix its permissions."
        ) from None
    return output_dir


#: The folder inside a run folder where a run that replaces the run there (``overwrite``) trains, until it finishes.
INCOMING = ".incoming"
#: The list of a finished replacement's entries, written in :data:`INCOMING` before any of them is moved.
SWAP_LIST = ".swap.json"
#: What :data:`INCOMING` becomes once all its entries are moved, until it is deleted.
REPLACED = ".replaced"


@dataclass(frozen=True)
class RunFolder:
    """Where a run writes: ``output_dir`` itself, or (``replacing``) ``output_dir/.incoming``, whose run replaces the
    run ``output_dir`` holds only once it has finished (:meth:`finish`): until then the earlier run stays whole.

    Args:
        output_dir: the run folder the user named.
        replacing: the run replaces an earlier run (finished or interrupted) in ``output_dir``.
    """

    output_dir: Path
    replacing: bool = False

    @property
    def run_dir(self) -> Path:
        """The folder the run writes its entries (:data:`RUN_ENTRIES`) into."""
        return self.output_dir / INCOMING if self.replacing else self.output_dir

    def begin(self) -> Path:
        """Make :attr:`run_dir` ready for a run that starts afresh: an interrupted replacement's folder is cleared (its
        run never finished; the run it was replacing stays). Returns :attr:`run_dir`."""
        if self.replacing and self.run_dir.exists():
            shutil.rmtree(self.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return self.run_dir

    def finish(self) -> None:
        """Swap a finished replacement in (:func:`complete_replacement`); nothing to do for a run written in place."""
        if self.replacing:
            complete_replacement(self.output_dir)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def complete_replacement(output_dir: str | Path) -> bool:
    """Move a finished replacement (``output_dir/.incoming`` holding its ``results.json``) into ``output_dir`` in place
    of the earlier run's entries; returns whether there was one.

    The entries to move are listed first (:data:`SWAP_LIST`), then each replaces its namesake, ``results.json`` last;
    an earlier entry the new run does not have is deleted. A process killed at any point of this leaves a state the
    next call completes: every run of this package calls it first, under the folder's lock.

    Args:
        output_dir: the run folder that may hold a finished replacement in ``.incoming``.
    """
    output_dir = Path(output_dir)
    _remove(output_dir / REPLACED)
    incoming = output_dir / INCOMING
    swap_list = incoming / SWAP_LIST
    if not swap_list.exists():
        if not (incoming / "results.json").exists():
            return False
        names = [name for name in RUN_ENTRIES if (incoming / name).exists()]
        swap_list.with_suffix(".tmp").write_text(json.dumps(names), encoding="utf-8")
        os.replace(swap_list.with_suffix(".tmp"), swap_list)
    names = json.loads(swap_list.read_text(encoding="utf-8"))
    for name in RUN_ENTRIES:
        if name in names and not (incoming / name).exists():  # moved before an interruption
            continue
        if name != "results.json":  # replaced atomically by os.replace; the last entry to move
            _remove(output_dir / name)
        if name in names:
            os.replace(incoming / name, output_dir / name)
    os.replace(incoming, output_dir / REPLACED)
    shutil.rmtree(output_dir / REPLACED)
    logger.info(f"{output_dir}: the new run replaced the earlier one.")
    return True


def _finished_entries(folder: Path) -> list[str]:
    return [name for name in FINISHED_RUN_ENTRIES if (folder / name).exists()]


def _complete_checkpoints(folder: Path) -> list[Path]:
    """The complete checkpoints of the run in ``folder`` (not of a replacement in its :data:`INCOMING`)."""
    markers = folder.glob(f"**/checkpoint-*/{COMPLETE_MARKER}")
    return sorted(marker.parent for marker in markers if marker.relative_to(folder).parts[0] != INCOMING)


def check_output_dir(
    output_dir: str | Path, resume: bool = False, overwrite: bool = False, resumable: bool = True
) -> RunFolder:
    """Decide where a run in ``output_dir`` writes, without changing anything: a ValueError, saying what to pass
    instead, refuses a folder holding a finished run or the complete checkpoints of an interrupted one, unless
    ``overwrite`` or (interrupted, ``resumable``) ``resume``; ``resume`` needs a complete checkpoint and no
    ``results.json``. With ``overwrite``, a folder holding any run entry is replaced only when the new run finishes
    (:class:`RunFolder`); ``resume`` continues such a replacement if it was interrupted.

    Args:
        output_dir: the run folder (it need not exist).
        resume: continue the interrupted run in the folder.
        overwrite: replace the run the folder holds, once the new one has finished.
        resumable: whether the method resumes (multitask and pixel-linguist restart as a whole).
    """
    output_dir = Path(output_dir)
    if resume and overwrite:
        raise ValueError(
            "Pass either --resume (RunOptions(resume=True)) or --overwrite (RunOptions(overwrite=True)), not both."
        )
    incoming = output_dir / INCOMING
    if incoming.exists() and not overwrite:
        if resume:
            if not _complete_checkpoints(incoming):
                raise ValueError(
                    f"--resume: the interrupted run in {incoming} (it was replacing the run in {output_dir}, which is "
                    "intact) holds no complete checkpoint. Pass --overwrite (RunOptions(overwrite=True)) to start the "
                    "replacement again."
                )
            return RunFolder(output_dir, replacing=True)
        raise ValueError(
            f"{output_dir} holds a run that was replacing the run there and was interrupted ({INCOMING}); the earlier "
            "run is intact. Pass --resume (RunOptions(resume=True)) to continue the replacement, or --overwrite "
            "(RunOptions(overwrite=True)) to start it again."
        )
    finished = _finished_entries(output_dir)
    checkpoints = _complete_checkpoints(output_dir)
    if resume:
        if (output_dir / "results.json").exists():
            raise ValueError(
                f"{output_dir} holds a finished run (results.json): there is nothing to resume. Pass --overwrite "
                "(RunOptions(overwrite=True)) to train it again, or choose another --output."
            )
        if not checkpoints:
            raise ValueError(
                f"--resume: {output_dir} holds no complete checkpoint to resume from. Run without --resume to start "
                "the run."
            )
        return RunFolder(output_dir)
    if overwrite:
        replacing = incoming.exists() or any((output_dir / name).exists() for name in RUN_ENTRIES)
        return RunFolder(output_dir, replacing=replacing)
    if (output_dir / "results.json").exists() or (finished and not checkpoints):
        raise ValueError(
            f"{output_dir} already holds a finished run ({', '.join(finished)}); a new run would replace it. Choose "
            "another --output, or pass --overwrite (RunOptions(overwrite=True)) to replace it once the new run has "
            "finished. --resume continues a run that was interrupted before it finished."
        )
    if checkpoints:
        how = (
            "Pass --resume (RunOptions(resume=True)) to continue it, or --overwrite (RunOptions(overwrite=True)) to "
            "start afresh."
            if resumable
            else "This recipe does not resume: pass --overwrite (RunOptions(overwrite=True)) to start it again."
        )
        listed = ", ".join(str(path.relative_to(output_dir)) for path in checkpoints)
        saving = f" Its saving was interrupted ({', '.join(finished)} written, no results.json)." if finished else ""
        raise ValueError(f"{output_dir} holds checkpoints of an interrupted run ({listed}).{saving} {how}")
    return RunFolder(output_dir)


def continuation(output_dir: str | Path, resumable: bool = True) -> Literal["start", "resume", "restart"]:
    """How a run goes on in a run folder whose run has not finished (what ``reproduce --resume`` does with each of its
    runs): ``"start"`` when the folder holds nothing of a run (missing, empty, or only the lock and log of a run
    stopped before its first checkpoint), ``"resume"`` when it holds complete checkpoints of a ``resumable`` method (or
    an interrupted replacement with them), ``"restart"`` otherwise (``overwrite``: the new run replaces what is there
    once it has finished).

    Args:
        output_dir: the run folder (it need not exist).
        resumable: whether the method resumes (multitask and pixel-linguist restart as a whole).
    """
    output_dir = Path(output_dir)
    incoming = output_dir / INCOMING
    if incoming.exists():
        return "resume" if resumable and _complete_checkpoints(incoming) else "restart"
    if _complete_checkpoints(output_dir):
        return "resume" if resumable else "restart"
    return "restart" if _finished_entries(output_dir) else "start"
