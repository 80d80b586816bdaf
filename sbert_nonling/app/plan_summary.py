"""What a run will do, said before it does it: precision, DataLoader workers, where it writes, steps per dataset."""

from __future__ import annotations

import logging
import tempfile
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Transformer

from sbert_nonling.app.output_folder import RunFolder
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.export.model_card import CardForm
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, PlanHooks, TrainingStage
from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.training.planned_batches import BatchPlan, planned_batches
from sbert_nonling.training.trainer import NonLinguisticTrainer

logger = logging.getLogger(__name__)


def saved_forms(model: SentenceTransformer) -> dict[str, CardForm]:
    """The folders a run saves ``model`` into, each with the form of its model card: ``model`` (``"pixel"`` for a model
    reading text as rendered pixels, ``"full"`` otherwise) and, for a model with a text route, ``export`` (``"text"``:
    :func:`~sbert_nonling.export.text_model.export_text_model`).

    Args:
        model: the model the run trains.
    """
    first = model[0]
    routes = list(first.sub_modules) if isinstance(first, ModalityRouter) else []
    forms: dict[str, CardForm] = {"model": "pixel" if "pixel" in routes else "full"}
    if "text" in routes or isinstance(first, Transformer):
        forms["export"] = "text"
    return forms


def check_step_cap(stage: TrainingStage, batches: BatchPlan, allow_unused_datasets: bool = False) -> None:
    """A ValueError when the stage's step cap leaves a training dataset without a batch, naming the dataset, the step
    of its first batch in the batch order, and what to pass instead; with ``allow_unused_datasets``, a warning.

    Args:
        stage: the training stage.
        batches: the batches its trainer will read (:func:`~sbert_nonling.training.planned_batches.planned_batches`).
        allow_unused_datasets: train on without the datasets the cap leaves out (a warning instead of the error).
    """
    if not batches.unused:
        return
    if allow_unused_datasets:
        unused = ", ".join(map(repr, batches.unused))
        logger.warning(f"Stage {stage.name!r} trains without {unused}: its step cap ends before their first batch.")
        return
    name = batches.unused[0]
    first = batches.first_step[name]
    order = (
        f"{batches.sampler} gives {name!r} its first batch at step {first}"
        if first
        else f"{batches.sampler} gives {name!r} no batch"
    )
    reads = ", ".join(f"{count} of {dataset!r}" for dataset, count in batches.batches.items() if count)
    fix = (
        f"Raise --max-steps (max_steps) to at least {first}"
        if first
        else f"Give {name!r} at least one full batch of rows"
    )
    raise ValueError(
        f"Stage {stage.name!r}: its {batches.optimizer_steps} steps read no batch of the {name!r} dataset ({reads} "
        f"batches): {order}. {fix}, or pass --allow-unused-datasets (allow_unused_datasets=True) to train without it."
    )


def describe_execution(summary: dict[str, Any]) -> str:
    """The trainer's :meth:`~sbert_nonling.training.trainer.NonLinguisticTrainer.execution` in words, e.g.
    ``"losses compiled (inductor), text padded to max_length"``.

    Args:
        summary: a dict holding ``compile`` and ``padding`` (a stage summary, a run's result).
    """
    compiled = f"losses compiled ({summary['compile']})" if summary["compile"] else "losses eager (not compiled)"
    padding = (
        "text padded to max_length (one shape)" if summary["padding"] == "max_length" else "text padded per batch"
    )
    return f"{compiled}, {padding}"


def stage_summary(
    stage: TrainingStage, trainer: NonLinguisticTrainer, allow_unused_datasets: bool = False
) -> dict[str, Any]:
    """One training stage of a plan summary, once its step cap is checked (:func:`check_step_cap` on the batches its
    trainer will read: :func:`~sbert_nonling.training.planned_batches.planned_batches`): its trainer, optimizer steps,
    batches per dataset and batch order, and how it runs its steps (the trainer's ``execution``).

    Args:
        stage: the training stage.
        trainer: its trainer, built (:meth:`~sbert_nonling.methods.TrainingStage.trainer`).
        allow_unused_datasets: a step cap that leaves a training dataset without a batch is a warning, not an error.
    """
    batches = planned_batches(trainer)
    check_step_cap(stage, batches, allow_unused_datasets)
    return {
        "name": stage.name,
        "trainer": type(trainer).__name__,
        "optimizer_steps": batches.optimizer_steps,
        "batches": batches.batches,
        "batch_order": batches.sampler or None,
        **trainer.execution(),
    }


def summary_header(
    config: MethodConfig, folder: RunFolder, model: SentenceTransformer, precision: str, workers: int
) -> dict[str, Any]:
    """The run-wide part of a plan summary: the recipe, the resolved precision and workers, and what it writes where.

    Args:
        config: the method's settings.
        folder: where the run writes (:func:`~sbert_nonling.app.output_folder.check_output_dir`).
        model: the plan's model (its :func:`saved_forms` are the folders written).
        precision: the resolved precision (``fp32``, ``bf16``, ``fp16``).
        workers: the resolved DataLoader workers.
    """
    writes = {"folder": str(folder.output_dir)}
    writes.update({name: str(folder.output_dir / name) for name in saved_forms(model)})
    if folder.replacing:
        writes["trains_in"] = str(folder.run_dir)
    return {
        "recipe": config.name or config.method,
        "precision": precision,
        "precision_setting": config.precision,
        "dataloader_num_workers": workers,
        "writes": writes,
    }


class _StageSummaries(PlanHooks):
    """A dry run's hooks (:meth:`~sbert_nonling.methods.MethodPlan.train` with ``dry_run``): each stage's
    :func:`stage_summary` (its step cap checked), each weight update by name.

    Args:
        allow_unused_datasets: a step cap that leaves a training dataset without a batch is a warning, not an error.
    """

    def __init__(self, allow_unused_datasets: bool) -> None:
        self.allow_unused_datasets = allow_unused_datasets
        self.stages: list[dict[str, Any]] = []

    def before_step(self, step: TrainingStage | ModelUpdate) -> None:
        if isinstance(step, ModelUpdate):
            self.stages.append({"name": step.name, "weight_update": True})

    def before_training(self, stage: TrainingStage, trainer: NonLinguisticTrainer) -> None:
        self.stages.append(stage_summary(stage, trainer, self.allow_unused_datasets))


def plan_summary(
    config: MethodConfig,
    plan: MethodPlan,
    folder: RunFolder,
    precision: str,
    workers: int,
    allow_unused_datasets: bool = False,
) -> dict[str, Any]:
    """What a run of ``plan`` will do (:func:`summary_header`, then one entry per stage: :func:`stage_summary`, or the
    name of a weight update). Each stage's trainer is built with its checkpoints in a temporary folder and its step cap
    checked as the run checks it (:func:`check_step_cap`), and nothing is trained or written: what ``train --dry-run``
    prints.

    Args:
        config: the method's settings.
        plan: the built plan.
        folder: where the run would write (:func:`~sbert_nonling.app.output_folder.check_output_dir`).
        precision: the resolved precision (``fp32``, ``bf16``, ``fp16``).
        workers: the resolved DataLoader workers.
        allow_unused_datasets: a step cap that leaves a training dataset without a batch is a warning, not an error.
    """
    summary = _StageSummaries(allow_unused_datasets)
    with tempfile.TemporaryDirectory(prefix="sbert-nonling-dry-run-") as scratch:
        plan.train(scratch, hooks=summary, dry_run=True)
    stages = summary.stages
    return {**summary_header(config, folder, plan.model, precision, workers), "stages": stages}


def log_summary_header(header: dict[str, Any]) -> None:
    """The run-wide part of a plan summary as one INFO line (``train.log``; the console with ``--verbose``).

    Args:
        header: :func:`summary_header`'s dict.
    """
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
    """One stage of a plan summary as one INFO line.

    Args:
        stage: a stage's :func:`stage_summary`, or ``{"name": ..., "weight_update": True}``.
    """
    if stage.get("weight_update"):
        logger.info(f"stage {stage['name']!r}: a weight update, no training")
        return
    batches = ", ".join(f"{name}: {count}" for name, count in stage["batches"].items())
    order = f", in {stage['batch_order']}'s order" if stage["batch_order"] else ""
    logger.info(
        f"stage {stage['name']!r} ({stage['trainer']}): {stage['optimizer_steps']} optimizer steps; "
        f"batches {batches}{order}; {describe_execution(stage)}"
    )
