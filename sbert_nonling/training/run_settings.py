"""A run's settings in every checkpoint, and the check that a resumed run continues with the same settings."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sbert_nonling.training.checkpoints import newest_intact_checkpoint, write_failure

#: The file of a checkpoint folder that holds the run's settings: ``{"settings": {...}, "changes": [...]}``.
RUN_SETTINGS_FILE = "run_settings.json"
#: Settings a resumed run may change (``--allow-changed KEY``; ``dataloader_*`` too): none changes what is computed.
SAFE_TO_CHANGE = ("eval_steps", "eval_tasks", "description", "reference")


def safe_to_change(key: str) -> bool:
    """Whether a resumed run may change setting ``key``: one of :data:`SAFE_TO_CHANGE` or a ``dataloader_*`` one.

    Args:
        key: a setting's name (a field of the run's config).
    """
    return key in SAFE_TO_CHANGE or key.startswith("dataloader_")


def write_run_settings(
    folder: str | os.PathLike, settings: Mapping[str, Any], changes: list[dict[str, Any]] | None = None
) -> None:
    """Write the run's ``settings`` and the ``changes`` of earlier resumes to :data:`RUN_SETTINGS_FILE` in checkpoint
    ``folder``, for :func:`check_resume_settings` (the
    :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` does it in every checkpoint, before the marker
    that lists the file); a failed write raises the
    :class:`~sbert_nonling.training.checkpoints.CheckpointWriteError` of
    :func:`~sbert_nonling.training.checkpoints.write_failure`.

    Args:
        folder: the checkpoint folder.
        settings: the run's settings (e.g. ``MethodConfig.to_dict()``).
        changes: the settings accepted as changed by earlier resumes (what :func:`check_resume_settings` returned).

    Example::

        import os
        from sbert_nonling.training.run_settings import write_run_settings

        os.makedirs("checkpoint-1", exist_ok=True)
        write_run_settings("checkpoint-1", {"learning_rate": 3e-5, "seed": 42})
        print(open("checkpoint-1/run_settings.json").read())  # {"changes": [], "settings": {...}}
    """
    try:
        with open(os.path.join(folder, RUN_SETTINGS_FILE), "w", encoding="utf8") as file:
            json.dump({"settings": dict(settings), "changes": changes or []}, file, indent=2, sort_keys=True)
    except OSError as error:
        raise write_failure(folder, error) from error


def dotted_settings(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``settings`` with each nested block's settings as dotted keys (``text_loss.temperature``), as ``--set`` names
    them.

    Args:
        settings: a run's settings (a block as a nested dict).
        prefix: the block's name and a dot, for a nested block.
    """
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, Mapping):
            flat.update(dotted_settings(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def changed_settings(recorded: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The settings that differ between a run's ``recorded`` settings and ``settings``, setting by setting (a block's
    one by one, as ``block.key``): ``{key: [recorded value, new value]}`` (None where one side lacks the key), sorted.

    Args:
        recorded: the settings a run was started with (``run_settings.json``, ``recipe.json``).
        settings: the settings to compare with them.
    """
    old, new = dotted_settings(recorded), dotted_settings(settings)
    return {key: [old.get(key), new.get(key)] for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)}


def describe_changes(changed: Mapping[str, list[Any]]) -> str:
    """:func:`changed_settings`' result in words, for an error message: ``key: old in the run, new now; ...``.

    Args:
        changed: setting -> ``[recorded value, new value]``.
    """
    return "; ".join(f"{key}: {values[0]!r} in the run, {values[1]!r} now" for key, values in changed.items())


def check_resume_point(
    checkpoint_dir: str | os.PathLike, settings: Mapping[str, Any], allow_changed: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Before a run resumes in ``checkpoint_dir``: the settings of its newest intact checkpoint
    (:func:`~sbert_nonling.training.checkpoints.newest_intact_checkpoint`) compared with ``settings`` by
    :func:`check_resume_settings` (a ValueError naming every differing setting). Returns the run's history of changed
    settings, this resume's appended, or ``[]`` when the folder holds no intact checkpoint (the run starts).

    Args:
        checkpoint_dir: the folder of the run's checkpoints.
        settings: the resumed run's settings.
        allow_changed: settings that may differ (each must be :func:`safe_to_change`).

    Example::

        from sbert_nonling.training.run_settings import check_resume_point

        print(check_resume_point("no-such-run/checkpoints", {"learning_rate": 1e-5}))  # []: nothing to resume
    """
    checkpoint = newest_intact_checkpoint(checkpoint_dir)
    return check_resume_settings(checkpoint, settings, allow_changed) if checkpoint else []


def check_resume_settings(
    checkpoint: str | os.PathLike, settings: Mapping[str, Any], allow_changed: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Compare the settings of a run about to resume from ``checkpoint`` with those recorded in it.

    Raises ValueError listing every differing setting with both values unless each is in ``allow_changed`` and
    :func:`safe_to_change` (an unsafe one there is refused too), and when the checkpoint records no settings.

    Args:
        checkpoint: the checkpoint folder the run resumes from (holding :func:`write_run_settings`' file).
        settings: the resumed run's settings, compared setting by setting with the recorded ones (a block's
            settings one by one, as ``block.key``).
        allow_changed: settings that may differ (each must be :func:`safe_to_change`).

    Returns:
        The run's history of changed settings, this resume's appended: ``{"step": N, "changed": {key: [old, new]}}``.
    """
    path = Path(checkpoint) / RUN_SETTINGS_FILE
    allow_changed = set(allow_changed)
    unsafe = sorted(key for key in allow_changed if not safe_to_change(key))
    if unsafe:
        raise ValueError(
            f"--allow-changed {', '.join(unsafe)}: only settings that do not change what is computed may change on "
            f"resume ({', '.join(SAFE_TO_CHANGE)}, dataloader_*); start a new run (--overwrite or another --output) "
            "instead."
        )
    if not path.is_file():
        raise ValueError(
            f"{checkpoint} holds no {RUN_SETTINGS_FILE}: it was not written by a run of sbert-nonling, which records "
            "its settings in every checkpoint, so a resume cannot check them. Start a new run (--overwrite or another "
            "--output)."
        )
    recorded = json.loads(path.read_text(encoding="utf8"))
    changed = changed_settings(recorded["settings"], settings)
    refused = {key: values for key, values in changed.items() if key not in allow_changed}
    if refused:
        listed = describe_changes(refused)
        safe = [key for key in refused if safe_to_change(key)]
        those = "that" if len(safe) == 1 else "those"
        allow = f" Pass --allow-changed {' --allow-changed '.join(safe)} to accept {those}." if safe else ""
        raise ValueError(
            f"--resume with other settings than the run in {Path(checkpoint).parent.parent} was started with "
            f"({listed}). Resume with the run's settings, or start a new run (--overwrite or another --output).{allow}"
        )
    step = json.loads((Path(checkpoint) / "trainer_state.json").read_text(encoding="utf8"))["global_step"]
    return recorded["changes"] + ([{"step": step, "changed": changed}] if changed else [])
