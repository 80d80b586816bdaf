"""A run's output folder: a new run never replaces an earlier one by accident, and resume needs something to resume."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from sbert_nonling.training.checkpoints import COMPLETE_MARKER

#: What the recipe runners write into a run folder; ``--overwrite`` deletes these and nothing else (``train.log`` is
#: appended to by every run).
RUN_ENTRIES = (
    "model",
    "export",
    "model.partial",
    "export.partial",
    "checkpoints",
    "stages",
    "tiny-encoder",
    "image_features.safetensors",
    "recipe.json",
    "results.json",
)
#: A folder holding any of these holds a finished run (a saved model or its results).
FINISHED_RUN_ENTRIES = ("results.json", "model", "export")


def make_output_dir(output_dir: str | Path) -> Path:
    """Create the run folder ``output_dir`` if needed and check that it can be written, before a run reads any
    data: a ValueError says so when it names a file or cannot be written (no permission, a read-only disk)."""
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(f"--output {str(output_dir)!r} is a file, not a folder; choose a folder (it is created if missing).")
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=output_dir).close()
    except OSError as error:
        raise ValueError(
            f"Cannot write into --output {str(output_dir)!r} ({error.strerror or error}); choose a folder you can write to, or fix its permissions."
        ) from None
    return output_dir


def prepare_output_dir(output_dir: str | Path, resume: bool = False, overwrite: bool = False, resumable: bool = True) -> Path:
    """Check ``output_dir`` before a run writes anything into it, and with ``overwrite`` clear the earlier run
    (:data:`RUN_ENTRIES`, nothing else). A finished run, or the complete checkpoints of an interrupted one, are refused
    unless ``overwrite`` or (interrupted, ``resumable``) ``resume``; ``resume`` needs a complete checkpoint and no
    ``results.json``. Raises ValueError, saying what to pass instead, before anything is deleted or written.
    """
    output_dir = Path(output_dir)
    if resume and overwrite:
        raise ValueError("Pass either resume (continue the run in the folder) or overwrite (replace it), not both.")
    finished = [name for name in FINISHED_RUN_ENTRIES if (output_dir / name).exists()]
    checkpoints = sorted(marker.parent for marker in output_dir.glob(f"**/checkpoint-*/{COMPLETE_MARKER}"))
    if resume:
        if (output_dir / "results.json").exists():
            raise ValueError(
                f"{output_dir} holds a finished run (results.json): there is nothing to resume. Pass --overwrite "
                "(overwrite=True) to train it again, or choose another --output."
            )
        if not checkpoints:
            raise ValueError(f"--resume: {output_dir} holds no complete checkpoint to resume from. Run without --resume to start the run.")
        return output_dir
    if overwrite:
        for name in RUN_ENTRIES:
            path = output_dir / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        return output_dir
    if (output_dir / "results.json").exists() or (finished and not checkpoints):
        raise ValueError(
            f"{output_dir} already holds a finished run ({', '.join(finished)}); a new run would replace it. Choose "
            "another --output, or pass --overwrite (overwrite=True) to replace it. --resume continues a run that was "
            "interrupted before it finished."
        )
    if checkpoints:
        how = (
            "Pass --resume (resume=True) to continue it, or --overwrite (overwrite=True) to start afresh."
            if resumable
            else "This recipe does not resume: pass --overwrite (overwrite=True) to start it again."
        )
        listed = ", ".join(str(path.relative_to(output_dir)) for path in checkpoints)
        saving = f" Its saving was interrupted ({', '.join(finished)} written, no results.json)." if finished else ""
        raise ValueError(f"{output_dir} holds checkpoints of an interrupted run ({listed}).{saving} {how}")
    return output_dir
