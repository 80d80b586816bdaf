"""What a run will do, said before it does it: precision, DataLoader workers, where it writes, steps per dataset."""

from __future__ import annotations

import copy
import dataclasses
import logging
import tempfile
from pathlib import Path
from typing import Any

from sbert_nonling.app.output_folder import RunFolder
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, TrainingStage
from sbert_nonling.training.planned_batches import BatchPlan, planned_batches
from sbert_nonling.training.trainer import NonLinguisticTrainer

logger = logging.getLogger(__name__)


def stage_output_dir(stage: TrainingStage, run_dir: Path) -> Path:
    """Where the stage writes its checkpoints: its arguments' ``output_dir``, relative to the run folder."""
    assert stage.args.output_dir is not None  # TrainingArguments fills its default ("trainer_output")
    return run_dir / stage.args.output_dir


def stage_trainer(stage: TrainingStage, plan: MethodPlan, run_dir: Path) -> NonLinguisticTrainer:
    """The stage's trainer of the plan's model and evaluator, its checkpoints in :func:`stage_output_dir` (on a copy of
    the stage's arguments: the plan is not changed)."""
    args = copy.copy(stage.args)
    args.output_dir = str(stage_output_dir(stage, run_dir))
    return dataclasses.replace(stage, args=args).trainer(plan.model, plan.evaluator)


def stage_summary(stage: TrainingStage, trainer: NonLinguisticTrainer, batches: BatchPlan) -> dict[str, Any]:
    """One training stage of a plan summary: its trainer, optimizer steps, batches per dataset and batch order."""
    return {
        "name": stage.name,
        "trainer": type(trainer).__name__,
        "optimizer_steps": batches.optimizer_steps,
        "batches": batches.batches,
        "batch_order": batches.sampler or None,
    }


def summary_header(
    config: MethodConfig, folder: RunFolder, has_text_export: bool, precision: str, workers: int
) -> dict[str, Any]:
    """The run-wide part of a plan summary: the recipe, the resolved precision and workers, and what it writes where."""
    writes = {"folder": str(folder.output_dir), "model": str(folder.output_dir / "model")}
    if has_text_export:
        writes["export"] = str(folder.output_dir / "export")
    if folder.replacing:
        writes["trains_in"] = str(folder.run_dir)
    return {
        "recipe": config.name or config.method,
        "precision": precision,
        "precision_setting": config.precision,
        "dataloader_num_workers": workers,
        "writes": writes,
    }


def plan_summary(
    config: MethodConfig, plan: MethodPlan, folder: RunFolder, precision: str, workers: int
) -> dict[str, Any]:
    """What a run of ``plan`` will do (:func:`summary_header`, then one entry per stage: :func:`stage_summary`, or the
    name of a weight update). Each stage's trainer is built with its checkpoints in a temporary folder, and nothing is
    trained or written: what ``train --dry-run`` prints.

    Args:
        config: the method's settings.
        plan: the built plan.
        folder: where the run would write (:func:`~sbert_nonling.app.output_folder.check_output_dir`).
        precision: the resolved precision (``fp32``, ``bf16``, ``fp16``).
        workers: the resolved DataLoader workers.
    """
    stages: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sbert-nonling-dry-run-") as scratch:
        for step in plan.stages:
            if isinstance(step, ModelUpdate):
                stages.append({"name": step.name, "weight_update": True})
            else:
                trainer = stage_trainer(step, plan, Path(scratch))
                stages.append(stage_summary(step, trainer, planned_batches(trainer)))
    return {**summary_header(config, folder, plan.has_text_export, precision, workers), "stages": stages}


def log_summary_header(header: dict[str, Any]) -> None:
    """The run-wide part of a plan summary as one INFO line (``train.log``; the console with ``--verbose``)."""
    replacing = (
        f" (trains in {header['writes']['trains_in']}; it replaces the earlier run when it finishes)"
        if "trains_in" in header["writes"]
        else ""
    )
    logger.info(
        f"{header['recipe']}: training in {header['precision']} ({header['precision_setting']}) with "
        f"{header['dataloader_num_workers']} DataLoader workers; writes {header['writes']['folder']}{replacing}"
    )


def log_stage_summary(stage: dict[str, Any]) -> None:
    """One stage of a plan summary as one INFO line."""
    if stage.get("weight_update"):
        logger.info(f"stage {stage['name']!r}: a weight update, no training")
        return
    batches = ", ".join(f"{name}: {count}" for name, count in stage["batches"].items())
    order = f", in {stage['batch_order']}'s order" if stage["batch_order"] else ""
    logger.info(
        f"stage {stage['name']!r} ({stage['trainer']}): {stage['optimizer_steps']} optimizer steps; batches {batches}{order}"
    )
