"""The one runner of every method: seed, build the plan, score dev, run its stages, save, export, record the run."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from transformers import set_seed

from sbert_nonling.app.output_folder import make_output_dir, prepare_output_dir
from sbert_nonling.app.run_lock import run_lock
from sbert_nonling.app.run_record import write_run_record
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.sts import evaluate_sts, evaluate_sts_dir
from sbert_nonling.evaluation.sts_data import load_stsb_multi_dir
from sbert_nonling.export.model_card import loss_citations
from sbert_nonling.export.text_model import export_text_model
from sbert_nonling.methods import BUILDERS
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, TrainingStage
from sbert_nonling.training.arguments import dev_curve, resolved_precision, resolved_workers
from sbert_nonling.training.checkpoints import CheckpointWriteError, last_complete_checkpoint, newest_intact_checkpoint
from sbert_nonling.training.finite_training import TrainingDiverged, non_finite_parameters
from sbert_nonling.training.preemption import TrainingPreempted
from sbert_nonling.training.run_settings import check_resume_settings

logger = logging.getLogger(__name__)


#: What a single-run plan's result reports about its one run (a staged plan reports them per stage).
RUN_FIELDS = ("best_checkpoint", "global_step", "dev_curve", "train_seconds", "step_seconds", "step_counts")


def _output_dir(stage: TrainingStage) -> str:
    output_dir = stage.args.output_dir
    assert output_dir is not None  # TrainingArguments fills its default ("trainer_output")
    return output_dir


def _train(
    stage: TrainingStage, plan: MethodPlan, output_dir: Path, resume: bool, config: MethodConfig, changes: list[dict[str, Any]], citations: list[str]
) -> dict[str, Any]:
    """One training stage: hooks, the trainer (checkpoints under ``output_dir``, each recording ``config`` and the
    settings changed on resume), hooks; its log entry. The stage's losses' citations are added to ``citations``."""
    resumable = config.resumable
    for hook in stage.before:
        hook(plan.model)
    stage.args.output_dir = str(output_dir / _output_dir(stage))
    trainer = stage.trainer(plan.model, plan.evaluator)
    trainer.run_settings.settings, trainer.run_settings.changes = config.to_dict(), changes
    try:
        train_output = trainer.train(resume_from_checkpoint=True if resume else None)
    except TrainingPreempted as stop:
        if resumable:
            raise
        # the stage's checkpoint is complete, but the method restarts as a whole
        raise TrainingPreempted(stop.signal_number, stop.checkpoint, resumable=False) from None
    for hook in stage.after:
        hook(plan.model)
    citations.extend(loss_citations(trainer.loss))
    entry = {
        **stage.record,
        "name": stage.name,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "global_step": trainer.state.global_step,
        "dev_curve": dev_curve(trainer.state.log_history),
        "train_seconds": train_output.metrics["train_runtime"],
        "step_seconds": dict(trainer.step_seconds),
        "step_counts": dict(trainer.step_counts),
    }
    return entry


def save_whole(write: Callable[[Path], object], folder: Path, checkpoints: Path | None = None) -> None:
    """Write a saved form of the model (``model``, ``export``) so that ``folder`` exists only once it is whole:
    ``write`` fills ``folder.partial``, which then replaces ``folder``. A failed write (disk full, no permission)
    raises :class:`CheckpointWriteError` saying that training is complete and ``--resume`` finishes the saving."""
    partial = folder.with_name(folder.name + ".partial")
    try:
        if partial.exists():
            shutil.rmtree(partial)
        write(partial)
        if folder.exists():  # an earlier, interrupted finish of this same run
            shutil.rmtree(folder)
        os.replace(partial, folder)
    except (OSError, SafetensorError) as error:
        kept = last_complete_checkpoint(checkpoints) if checkpoints else None
        how = (
            f"training is complete and {kept} holds it: fix the cause, then run the same command again with --resume (resume=True) to finish saving"
            if kept
            else "fix the cause, then run the same command again"
        )
        raise CheckpointWriteError(
            f"Could not write {folder}: {error}. {shutil.disk_usage(folder.parent).free / 2**20:.1f} MiB are free on that disk; {how}."
        ) from error


def run_method(
    config: MethodConfig,
    data: DataSources,
    output_dir: str | Path,
    build: Callable[[Any, DataSources], MethodPlan] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    allow_changed: Iterable[str] = (),
) -> dict[str, Any]:
    """Run a method end to end: check, lock (:func:`run_lock`) and prepare (:func:`prepare_output_dir`) the folder;
    ``set_seed(config.seed)``; ``build(config, data)``; write the plan's ``files``; dev scores before (``data.sts_dir``,
    ``data.stsb_multi_dir``); the plan's stages (best STS-B dev checkpoint loaded at the end of each run; a staged plan
    scores dev after every stage); dev scores after; save ``output_dir/model`` and ``output_dir/export`` (with model
    cards); the plan's evaluations; ``recipe.json`` and ``results.json``.

    Args:
        config: the method's settings (recorded; ``config.seed`` seeds).
        data: the run's data sources, given whole to the builder.
        output_dir: run folder.
        build: makes the :class:`MethodPlan` of ``(config, data)``; default: :data:`~sbert_nonling.methods.BUILDERS`.
        resume: continue an interrupted run of a ``resumable`` method from its newest intact checkpoint.
        overwrite: replace the run ``output_dir`` holds.
        allow_changed: settings a resume may change (:func:`~sbert_nonling.training.run_settings.safe_to_change`),
            recorded as ``"settings_changed_on_resume"``; other changes are refused.

    Raises:
        TrainingPreempted: SIGTERM / SIGINT stopped training after a complete checkpoint.

    Returns:
        ``{"recipe", "model", "export", "dev_before", "dev_after", "multilingual_before", "multilingual_after",
        "precision", "dataloader_num_workers", "global_step", "best_checkpoint"}``, then :data:`RUN_FIELDS` (single
        run) or ``"stages"`` (staged plan), and one key per plan evaluation.
    """
    if resume and not config.resumable:
        raise ValueError(f"resume is not supported by {config.name or config.method} (a sequence of stage runs); start it again.")
    precision, workers = resolved_precision(config.precision), resolved_workers(config.dataloader_num_workers)
    output_dir = make_output_dir(output_dir)
    logger.info(f"{config.name or config.method}: training in {precision} ({config.precision}) with {workers} DataLoader workers")
    with run_lock(output_dir):  # one writer per folder, from the first check to the run record
        output_dir = prepare_output_dir(output_dir, resume=resume, overwrite=overwrite, resumable=config.resumable)
        checkpoint = newest_intact_checkpoint(output_dir / "checkpoints") if resume else None
        changes = check_resume_settings(checkpoint, config.to_dict(), allow_changed) if checkpoint else []
        set_seed(config.seed)  # front-ends and loss heads are initialised before the trainer seeds anything
        plan = (build or BUILDERS[config.method])(config, data)
        for name, write in plan.files.items():
            write(output_dir / name)
        sts_dir = data.sts_dir
        multilingual = load_stsb_multi_dir(data.stsb_multi_dir, "dev") if data.stsb_multi_dir else []
        dev_before = evaluate_sts_dir(plan.model, sts_dir, "dev") if sts_dir else {}
        multilingual_before = evaluate_sts(plan.model, multilingual) if multilingual else {}

        entries: list[dict[str, Any]] = []
        citations: list[str] = []
        for step in plan.stages:
            if isinstance(step, ModelUpdate):
                step.apply(plan.model)
                entry = {**step.record, "name": step.name}
            else:
                entry = _train(step, plan, output_dir, resume, config, changes, citations)
            if plan.staged and sts_dir is not None:
                entry["dev"] = evaluate_sts_dir(plan.model, sts_dir, "dev")
            entries.append(entry)

        result: dict[str, Any] = {
            "recipe": config.name,
            "model": str(output_dir / "model"),
            "export": str(output_dir / "export") if plan.has_text_export else None,
            "dev_before": dev_before,
            "dev_after": evaluate_sts_dir(plan.model, sts_dir, "dev") if sts_dir else {},
            "multilingual_before": multilingual_before,
            "multilingual_after": evaluate_sts(plan.model, multilingual) if multilingual else {},
            "precision": precision,
            "dataloader_num_workers": workers,
        }
        checkpoints = next((Path(_output_dir(step)) for step in plan.stages if isinstance(step, TrainingStage)), None)
        bad = non_finite_parameters(plan.model.state_dict().items())
        if bad:  # e.g. a weight average of diverged runs: never saved
            raise TrainingDiverged(f"The trained model holds NaN or infinite weights ({bad[0]}, {len(bad)} in all); it was not saved.")
        save_whole(lambda folder: plan.model.save(str(folder)), output_dir / "model", checkpoints)
        if plan.has_text_export:
            save_whole(lambda folder: export_text_model(plan.model, folder), output_dir / "export", checkpoints)
        runs = [entry for step, entry in zip(plan.stages, entries) if isinstance(step, TrainingStage)]
        if plan.staged:
            result["stages"] = entries
            result["global_step"] = sum(entry["global_step"] for entry in runs)
            result["best_checkpoint"] = runs[-1]["best_checkpoint"] if runs else None
        else:
            (run,) = runs
            result.update({field: run[field] for field in RUN_FIELDS})
        if changes:
            result["settings_changed_on_resume"] = changes
        for name, evaluate in plan.evaluations.items():
            result[name] = evaluate(plan.model)
        forms = {"model": plan.card_form, "export": "text"} if plan.has_text_export else {"model": plan.card_form}
        write_run_record(output_dir, config.to_dict(), result, forms, plan.training_data, citations)
        return result
