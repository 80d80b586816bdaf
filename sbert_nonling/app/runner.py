"""The one runner of every method: a recipe or a method's config run end to end (check the folder, build the plan,
score dev, run its stages, save, export and record), logged into the run's ``train.log``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import shutil
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from sentence_transformers import SentenceTransformer
from transformers import set_seed
from transformers.trainer_utils import TrainOutput

from sbert_nonling.app.output_folder import (
    RunFolder,
    check_output_dir,
    check_output_target,
    complete_replacement,
    make_output_dir,
)
from sbert_nonling.app.plan_summary import (
    log_stage_summary,
    log_summary_header,
    plan_summary,
    saved_forms,
    stage_summary,
    summary_header,
)
from sbert_nonling.app.recipes import recipe_config
from sbert_nonling.app.run_lock import run_lock
from sbert_nonling.app.run_options import RunOptions
from sbert_nonling.app.run_record import write_run_record
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.configs.registry import get_method
from sbert_nonling.data.image_features import planning_only, save_image_features
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.sts import evaluate_sts, evaluate_sts_dir
from sbert_nonling.evaluation.sts_data import load_sts_dir, load_stsb_multi_dir
from sbert_nonling.export.model_card import loss_citations
from sbert_nonling.export.text_model import export_text_model
from sbert_nonling.methods import BUILDERS
from sbert_nonling.methods.grounding import GroundingPlan
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, PlanHooks, TrainingStage
from sbert_nonling.training.arguments import resolved_precision, resolved_workers
from sbert_nonling.training.checkpoints import CheckpointWriteError, last_complete_checkpoint
from sbert_nonling.training.finite_training import TrainingDiverged, non_finite_parameters
from sbert_nonling.training.preemption import TrainingPreempted
from sbert_nonling.training.run_settings import check_resume_point
from sbert_nonling.training.trainer import NonLinguisticTrainer

logger = logging.getLogger(__name__)


#: What a single-run plan's result reports about its one run (a staged plan reports them per stage).
RUN_FIELDS = (
    "best_checkpoint",
    "global_step",
    "dev_curve",
    "train_seconds",
    "step_seconds",
    "step_counts",
    "compile",
    "padding",
)
#: Where a run keeps the image features its grounding plan extracted (``sbert-nonling train ... --image-features``).
IMAGE_FEATURES_FILE = "image_features.safetensors"


#: The loggers whose INFO records a run's ``train.log`` keeps.
LOGGED_PACKAGES = ("sbert_nonling", "sentence_transformers")


@contextlib.contextmanager
def run_log(path: str | Path) -> Iterator[None]:
    """Inside the block, also append the INFO records of :data:`LOGGED_PACKAGES` to ``path``; the console keeps its
    own level (a logger's records reach the root handlers only at the level those are set to).

    Args:
        path: the log file, appended to (each run adds its own lines).

    Example::

        import logging
        from sbert_nonling.app.runner import run_log

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


class TrainingCrashed(RuntimeError):
    """Training stopped on an error that is not the input's (a DataLoader worker killed, out of memory, a failed step):
    one sentence naming what happened and the last complete checkpoint; the traceback is in ``train.log``.

    Args:
        stage: the training stage that failed.
        step: the last optimizer step that finished.
        error: the error.
        checkpoint: the last complete checkpoint of the stage, or None.
    """

    def __init__(self, stage: str, step: int, error: BaseException, checkpoint: str | None) -> None:
        what = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else "no message"
        kept = (
            f"The last complete checkpoint is {checkpoint}: fix the cause, then run the same command with --resume "
            "(RunOptions(resume=True))."
            if checkpoint
            else "No checkpoint had been written: fix the cause, then run the same command again."
        )
        super().__init__(f"Training stage {stage!r} failed after step {step}: {type(error).__name__}: {what}. {kept}")
        self.checkpoint = checkpoint


@dataclass
class RunContext:
    """What the stages of one run share: where it writes, what its checkpoints record, how it resumes.

    Args:
        run_dir: the folder the run writes into (the run folder, or the folder of a replacement).
        settings: the run's settings, recorded in every checkpoint.
        changes: the settings changed on resume, recorded too.
        options: the run's options (``resume``: continue from the newest intact checkpoint; ``allow_unused_datasets``:
            train on, with a warning, when a step cap leaves a dataset without a batch).
        resumable: whether the method resumes (a preempted stage of another method says to start again).
        precision, dataloader_num_workers: the resolved precision and workers, recorded in the results.
        training_data: the model cards' lines on the data the run trains on (:func:`training_data`).
        citations: the losses' citations, collected stage by stage.
    """

    run_dir: Path
    settings: dict[str, Any]
    changes: list[dict[str, Any]]
    options: RunOptions
    resumable: bool
    precision: str = "fp32"
    dataloader_num_workers: int = 0
    training_data: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)


class _RunHooks(PlanHooks):
    """What the runner does around each step of the plan (:meth:`~sbert_nonling.methods.MethodPlan.train` calls it):
    before a stage trains, refuse a step cap that leaves a dataset without a batch, log the batches its trainer will
    read (:func:`stage_summary`), have its checkpoints record the run's settings; after each step, its log entry (with
    dev scores when the run :func:`reports_stages`). It keeps the step and trainer it is at, for the report of an
    error.

    Args:
        plan: the plan being run.
        run: what the stages of the run share.
        sts_dir: the STS folder dev is scored on after each step of a staged run, or None.
        staged: whether the run reports each step (:func:`reports_stages`).
    """

    def __init__(self, plan: MethodPlan, run: RunContext, sts_dir: str | Path | None, staged: bool) -> None:
        self.plan = plan
        self.run = run
        self.sts_dir = sts_dir
        self.staged = staged
        self.step: TrainingStage | ModelUpdate | None = None
        self.trainer: NonLinguisticTrainer | None = None
        self.entries: list[dict[str, Any]] = []
        #: the dev scores logged for the checkpoint the model ends with ({} if unknown: the trainer's best_dev_scores)
        self.logged_dev: dict[str, float] = {}

    def before_step(self, step: TrainingStage | ModelUpdate) -> None:
        self.step, self.trainer = step, None

    def before_training(self, stage: TrainingStage, trainer: NonLinguisticTrainer) -> None:
        self.trainer = trainer
        log_stage_summary(stage_summary(stage, trainer, self.run.options.allow_unused_datasets))
        trainer.run_settings, trainer.settings_changes = self.run.settings, self.run.changes

    def after_step(self, step: TrainingStage | ModelUpdate, output: TrainOutput | None) -> None:
        if isinstance(step, ModelUpdate) or output is None:
            entry = {**step.record, "name": step.name}
        else:
            trainer = self.trainer
            assert trainer is not None  # the stage's run built it before training
            self.run.citations.extend(loss_citations(trainer.loss))
            entry = {
                **step.record,
                "name": step.name,
                "train_seconds": output.metrics["train_runtime"],
                **trainer.training_record(),
            }
            self.logged_dev = {} if step.after else trainer.best_dev_scores()
        if self.staged and self.sts_dir is not None:
            entry["dev"] = evaluate_sts_dir(self.plan.model, self.sts_dir, "dev")
        self.entries.append(entry)


def _train_plan(plan: MethodPlan, run: RunContext, hooks: _RunHooks) -> None:
    """Run the plan's steps (:meth:`~sbert_nonling.methods.MethodPlan.train` with the runner's ``hooks``); a crash
    becomes one :class:`TrainingCrashed` sentence naming the stage and its last complete checkpoint (the traceback in
    ``train.log``), a preempted stage of a method that does not resume says to start again."""
    try:
        plan.train(run.run_dir, run.options.resume, hooks)
    except TrainingPreempted as stop:
        if run.resumable:
            raise
        # the stage's checkpoint is complete, but the method restarts as a whole
        raise TrainingPreempted(stop.signal_number, stop.checkpoint, resumable=False) from None
    except (TrainingDiverged, CheckpointWriteError, ValueError):
        raise
    except Exception as error:
        if not isinstance(hooks.step, TrainingStage):  # a weight update failed: not a training crash
            raise
        # a DataLoader worker killed, out of memory, ...: one sentence; the traceback in train.log
        cause, trace = crash_cause(error)
        logger.info("Training failed:\n%s", trace)
        raise TrainingCrashed(
            hooks.step.name,
            hooks.trainer.state.global_step if hooks.trainer is not None else 0,
            cause,
            last_complete_checkpoint(hooks.step.checkpoint_dir(run.run_dir)),
        ) from error


def crash_cause(error: Exception) -> tuple[Exception, str]:
    """The error a training crash is reported as, and the text of ``error``'s traceback for ``train.log``.

    A killed DataLoader worker may first surface as another error: the connection it was handing a batch over is
    reset. torch's SIGCHLD handler then raises its own error, which names the worker and its signal, at whichever
    Python line of the main thread runs next, often while the traceback is being formatted (reading the source
    lines). Caught there, that error is the one reported, and logging is left with a finished text (an error raised
    inside a logging handler would be printed to the console as a "Logging error").

    Args:
        error: the error training stopped on.
    """
    try:
        return error, "".join(traceback.format_exception(error))
    except RuntimeError as raised:
        if "DataLoader worker" not in str(raised):
            raise
        return raised, "".join(traceback.format_exception(error))


def save_whole(write: Callable[[str], object], folder: Path, checkpoints: Path | None = None) -> None:
    """Write a saved form of the model (``model``, ``export``) so that ``folder`` exists only once it is whole:
    ``write`` fills ``folder.partial``, which then replaces ``folder``. A failed write (disk full, no permission)
    raises :class:`CheckpointWriteError` saying that training is complete and ``--resume`` finishes the saving.

    Args:
        write: writes the saved form into the folder it is given (a path string, as sentence-transformers' ``save``).
        folder: where the saved form goes.
        checkpoints: the run's checkpoint folder, named in the error as what holds the trained model.
    """
    partial = folder.with_name(folder.name + ".partial")
    try:
        if partial.exists():
            shutil.rmtree(partial)
        write(str(partial))
        if folder.exists():  # an earlier, interrupted finish of this same run
            shutil.rmtree(folder)
        os.replace(partial, folder)
    except (OSError, SafetensorError) as error:
        kept = last_complete_checkpoint(checkpoints) if checkpoints else None
        how = (
            f"training is complete and {kept} holds it: fix the cause, then run the same command again with --resume "
            "(RunOptions(resume=True)) to finish saving"
            if kept
            else "fix the cause, then run the same command again"
        )
        free = shutil.disk_usage(folder.parent).free / 2**20
        raise CheckpointWriteError(
            f"Could not write {folder}: {error}. {free:.1f} MiB are free on that disk; {how}."
        ) from error


def train_recipe(
    recipe: str,
    output_dir: str | Path,
    data: DataSources,
    overrides: dict[str, Any] | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    options: RunOptions = RunOptions(),
) -> dict[str, Any]:
    """Train ``recipe``: its method's typed config (:func:`recipe_config`: file, tiny block, overrides, ``max_steps``
    cap) run by :func:`run_method`, whose result it returns (docs/getting_started.md).

    Args:
        recipe: a name from :func:`~sbert_nonling.app.recipes.list_recipes`, or a recipe file of your own (a path
            ending in ``.json``: docs/adding_a_method.md).
        output_dir: run folder.
        data: the data sources (:class:`~sbert_nonling.data.DataSources`); the method names a missing one.
        overrides: recipe settings, e.g. ``{"learning_rate": 1e-5}``, ``{"contrastive.batch_size": 32}``, ``{"model":
            "all-MiniLM-L6-v2"}`` (a sentence-transformers model keeps its own pooling and ``max_seq_length`` unless
            those are overridden too).
        tiny: a small random encoder built offline, with the recipe's ``tiny`` settings; not with a ``model`` override.
        max_steps: stop after this many optimizer steps (of each stage run for the multi-stage methods); at least 1.
        options: how the run treats its folder and its checks
            (:class:`~sbert_nonling.app.run_options.RunOptions`): ``resume`` an interrupted run exactly
            (docs/reliability.md; not for pixel-linguist and multitask) with the settings ``allow_changed`` may change,
            ``overwrite`` the run ``output_dir`` holds once the new run has finished, ``dry_run`` (check every input
            and build the plan, then return what the run would do: precision, DataLoader workers, where it writes,
            optimizer steps and batches per dataset of each stage; touch nothing), ``allow_unused_datasets`` (a
            ``max_steps`` cap that leaves a training dataset without a batch is a warning; by default it is refused
            before the first step).

    Raises:
        TrainingCrashed: training failed (a DataLoader worker died, out of memory); names the last checkpoint.
        CheckpointWriteError: writing a checkpoint failed; earlier ones are intact, resume once fixed.
        TrainingPreempted: SIGTERM / SIGINT stopped training after a complete checkpoint; resume continues.
    """
    config = recipe_config(recipe, overrides, tiny, max_steps)
    return run_method(config, data, output_dir, options=options)


def run_method(
    config: MethodConfig,
    data: DataSources,
    output_dir: str | Path,
    build: Callable[[Any, DataSources], MethodPlan] | None = None,
    options: RunOptions = RunOptions(),
) -> dict[str, Any]:
    """Run a method end to end: check the folder (nothing is changed yet: :func:`check_output_dir`);
    ``set_seed(config.seed)``; ``build(config, data)``, which reads and checks the data; log the plan (also into
    ``OUT/train.log``); keep the image features a grounding plan extracted (``OUT/image_features.safetensors``); dev
    scores before (``data.sts_dir``, ``data.stsb_multi_dir``); the plan's steps, each stage run by
    :meth:`~sbert_nonling.methods.TrainingStage.run` (each refuses a step cap that leaves a dataset without a batch
    before its first step; the best STS-B dev checkpoint is loaded at the end of each run; a run that
    :func:`reports_stages` scores dev after every step); dev scores after; save ``output_dir/model`` and
    ``output_dir/export`` (:func:`saved_forms`, with model cards listing :func:`training_data`); the plan's
    evaluations; ``recipe.json`` and ``results.json``.

    A run that replaces another (``overwrite``) trains in ``output_dir/.incoming`` and takes the earlier run's place
    only once it has finished: bad input, a crash or a kill leave the earlier run whole.

    Args:
        config: the method's settings (recorded; ``config.seed`` seeds).
        data: the run's data sources, given whole to the builder.
        output_dir: run folder.
        build: makes the :class:`MethodPlan` of ``(config, data)``; default: :data:`~sbert_nonling.methods.BUILDERS`.
        options: how the run treats its folder and its checks (:class:`~sbert_nonling.app.run_options.RunOptions`):
            ``resume`` an interrupted run of a ``resumable`` method from its newest intact checkpoint, the settings
            ``allow_changed`` may change on resume (recorded as ``"settings_changed_on_resume"``; other changes are
            refused), ``overwrite`` the run ``output_dir`` holds once the new run has finished, ``dry_run`` (check
            every input and build the plan, then return its :func:`plan_summary` without creating, training or
            writing anything), ``allow_unused_datasets`` (a step cap that leaves a training dataset without a batch
            is a warning instead of an error).

    Raises:
        TrainingPreempted: SIGTERM / SIGINT stopped training after a complete checkpoint.
        TrainingCrashed: training failed (a DataLoader worker died, out of memory, ...); it names the last checkpoint.

    Returns:
        ``{"recipe", "model", "export", "dev_before", "dev_after", "multilingual_before", "multilingual_after",
        "precision", "dataloader_num_workers", "global_step", "best_checkpoint"}``, then :data:`RUN_FIELDS` (single
        run) or ``"stages"`` (:func:`reports_stages`), and one key per plan evaluation. With ``dry_run``: the plan
        summary.
    """
    if options.resume and not config.resumable:
        raise ValueError(
            f"resume is not supported by {config.name or config.method} (a sequence of stage runs); start it again."
        )
    training_data(config, data)  # the method's registration checked before anything runs
    build = build or BUILDERS[config.method]
    if options.dry_run:  # every check of a real run before its first step, and nothing heavy
        return _dry_run(config, data, output_dir, build, options)
    with _checked_folder(config, output_dir, options) as (folder, changes):
        set_seed(config.seed)  # front-ends and loss heads are initialised before the trainer seeds anything
        plan = build(config, data)
        return _run_plan(config, plan, data, folder, _run_context(config, data, folder, changes, options))


def _dry_run(
    config: MethodConfig,
    data: DataSources,
    output_dir: str | Path,
    build: Callable[[Any, DataSources], MethodPlan],
    options: RunOptions,
) -> dict[str, Any]:
    """:func:`run_method` with ``options.dry_run``: the folder and resume checks, the plan built (image features
    planned, not extracted), its :func:`plan_summary` logged and returned; nothing is created or written."""
    folder = check_output_dir(
        check_output_target(output_dir), resume=options.resume, overwrite=options.overwrite, resumable=config.resumable
    )
    if options.resume:
        check_resume_point(folder.run_dir / "checkpoints", config.to_dict(), options.allow_changed)
    set_seed(config.seed)
    with planning_only():  # image features: every image checked, the encoder run on one batch
        plan = build(config, data)
    precision, workers = resolved_precision(config.precision), resolved_workers(config.dataloader_num_workers)
    summary = plan_summary(config, plan, folder, precision, workers, options.allow_unused_datasets)
    log_summary_header(summary)
    for stage in summary["stages"]:
        log_stage_summary(stage)
    return summary


@contextlib.contextmanager
def _checked_folder(
    config: MethodConfig, output_dir: str | Path, options: RunOptions
) -> Iterator[tuple[RunFolder, list[dict[str, Any]]]]:
    """The run folder, made and locked (one writer per folder, from the first check to the run record; a replacement
    killed while it moved in is moved in first), checked for what ``options`` ask (:func:`check_output_dir`), and the
    settings changed on resume (:func:`check_resume_point`); the folder is finished (a replacement moved in) when the
    block ends without an error."""
    output_dir = make_output_dir(output_dir)
    with run_lock(output_dir):
        complete_replacement(output_dir)
        folder = check_output_dir(
            output_dir, resume=options.resume, overwrite=options.overwrite, resumable=config.resumable
        )
        changes = (
            check_resume_point(folder.run_dir / "checkpoints", config.to_dict(), options.allow_changed)
            if options.resume
            else []
        )
        yield folder, changes
        folder.finish()


def _run_context(
    config: MethodConfig, data: DataSources, folder: RunFolder, changes: list[dict[str, Any]], options: RunOptions
) -> RunContext:
    """What the stages of a run share, once its plan is built: the folder it writes into (begun now, unless it
    resumes), its settings, the resolved precision and DataLoader workers, the card lines on its data."""
    return RunContext(
        folder.run_dir if options.resume else folder.begin(),
        config.to_dict(),
        changes,
        options,
        config.resumable,
        resolved_precision(config.precision),
        resolved_workers(config.dataloader_num_workers),
        training_data(config, data),
    )


def reports_stages(config: MethodConfig, plan: MethodPlan) -> bool:
    """Whether a run reports each step of ``plan`` (``"stages"``, each with its dev scores) rather than its one
    training run at the top of the result: a method that trains in stages (its config has stage settings) or a plan
    of several steps.

    Args:
        config: the method's settings.
        plan: the built plan.
    """
    return bool(config.stages()) or len(plan.stages) != 1


def training_data(config: MethodConfig, data: DataSources) -> list[str]:
    """The model card's lines on the data a run of ``config``'s method trains on
    (:meth:`~sbert_nonling.data.DataSources.card_lines`): the ``training_sources`` of its registration
    (:func:`~sbert_nonling.configs.get_method`) that its settings train on
    (:meth:`~sbert_nonling.configs.MethodConfig.trains_on`: e.g. multitask's ``sts_dir`` only when its second stage
    trains on the task files). A registered source that is not a data source raises a ValueError naming it.

    Args:
        config: the method's settings.
        data: the run's data sources.
    """
    spec = get_method(config.method)
    valid = [item.name for item in dataclasses.fields(DataSources)]
    unknown = [source for source in spec.training_sources if source not in valid]
    if unknown:
        raise ValueError(
            f"Method {spec.name!r} is registered with training_sources {unknown}, which are not data sources; valid: "
            f"{', '.join(valid)}."
        )
    return data.card_lines(*[source for source in spec.training_sources if config.trains_on(source)])


def _run_plan(
    config: MethodConfig, plan: MethodPlan, data: DataSources, folder: RunFolder, run: RunContext
) -> dict[str, Any]:
    """Everything :func:`run_method` does after the checks, logged into ``OUT/train.log``: score before
    (:func:`_before_training`), train (:func:`_train_plan`), then save and record (:func:`_after_training`) in
    ``run.run_dir``; the result names the paths the run will have in ``folder.output_dir``."""
    with run_log(folder.output_dir / "train.log"):
        result = _before_training(config, plan, data, folder, run)
        hooks = _RunHooks(plan, run, data.sts_dir, reports_stages(config, plan))
        _train_plan(plan, run, hooks)
        return _after_training(config, plan, data, folder, run, hooks, result)


def _before_training(
    config: MethodConfig, plan: MethodPlan, data: DataSources, folder: RunFolder, run: RunContext
) -> dict[str, Any]:
    """The run's plan logged, the image features a grounding plan extracted kept, and the start of the result: dev
    scores before training (``data.sts_dir``, ``data.stsb_multi_dir``) and where the run writes."""
    log_summary_header(summary_header(config, folder, plan.model, run.precision, run.dataloader_num_workers))
    if isinstance(plan, GroundingPlan) and plan.extracted_features is not None:
        save_image_features(
            run.run_dir / IMAGE_FEATURES_FILE, *plan.extracted_features, captions=plan.extracted_captions
        )
    multilingual = load_stsb_multi_dir(data.stsb_multi_dir, "dev") if data.stsb_multi_dir else []
    return {
        "recipe": config.name,
        "model": str(folder.output_dir / "model"),
        "export": str(folder.output_dir / "export") if "export" in saved_forms(plan.model) else None,
        "dev_before": evaluate_sts_dir(plan.model, data.sts_dir, "dev") if data.sts_dir else {},
        "multilingual_before": evaluate_sts(plan.model, multilingual) if multilingual else {},
    }


def _after_training(
    config: MethodConfig,
    plan: MethodPlan,
    data: DataSources,
    folder: RunFolder,
    run: RunContext,
    hooks: _RunHooks,
    result: dict[str, Any],
) -> dict[str, Any]:
    """The trained model checked for non-finite weights, saved (``model``, ``export``: :func:`save_whole`), scored
    (dev after, the plan's evaluations) and recorded (``recipe.json``, ``results.json``); returns the whole result,
    ``result`` (:func:`_before_training`'s) completed."""
    run_dir = run.run_dir
    staged = reports_stages(config, plan)
    forms = saved_forms(plan.model)
    multilingual = load_stsb_multi_dir(data.stsb_multi_dir, "dev") if data.stsb_multi_dir else []
    result = {
        **{key: result[key] for key in ("recipe", "model", "export", "dev_before")},
        "dev_after": _dev_after(plan.model, data.sts_dir, {} if staged else hooks.logged_dev) if data.sts_dir else {},
        "multilingual_before": result["multilingual_before"],
        "multilingual_after": evaluate_sts(plan.model, multilingual) if multilingual else {},
        "precision": run.precision,
        "dataloader_num_workers": run.dataloader_num_workers,
    }
    training = [step for step in plan.stages if isinstance(step, TrainingStage)]
    checkpoints = training[0].checkpoint_dir(run_dir) if training else None
    bad = non_finite_parameters(plan.model.state_dict().items())
    if bad:  # e.g. a weight average of diverged runs: never saved
        raise TrainingDiverged(
            f"The trained model holds NaN or infinite weights ({bad[0]}, {len(bad)} in all); it was not saved."
        )
    save_whole(plan.model.save_pretrained, run_dir / "model", checkpoints)
    if "export" in forms:
        save_whole(functools.partial(export_text_model, plan.model), run_dir / "export", checkpoints)
    runs = [
        _in_run_folder(entry, run_dir, folder.output_dir)
        for step, entry in zip(plan.stages, hooks.entries)
        if isinstance(step, TrainingStage)
    ]
    if staged:
        result["stages"] = [_in_run_folder(entry, run_dir, folder.output_dir) for entry in hooks.entries]
        result["global_step"] = sum(entry["global_step"] for entry in runs)
        result["best_checkpoint"] = runs[-1]["best_checkpoint"] if runs else None
    else:
        (single,) = runs
        result.update({name: single[name] for name in RUN_FIELDS})
    if run.changes:
        result["settings_changed_on_resume"] = run.changes
    for name, evaluate in plan.evaluations.items():
        result[name] = evaluate(plan.model)
    write_run_record(run_dir, run.settings, result, forms, run.training_data, run.citations)
    return result


def _dev_after(model: SentenceTransformer, sts_dir: str | Path, logged: dict[str, float]) -> dict[str, float]:
    """The trained model's dev scores. A task the trainer scored for the best checkpoint it loaded (the same evaluator
    on the same weights) is taken from its log (``logged``); only the others are scored."""
    tasks = load_sts_dir(sts_dir, "dev")
    reused = {task.name: logged[task.name] for task in tasks if task.name in logged}
    scored = (
        evaluate_sts(model, [task for task in tasks if task.name not in reused]) if len(reused) < len(tasks) else {}
    )
    scores = {task.name: reused[task.name] if task.name in reused else scored[task.name] for task in tasks}
    scores["avg"] = sum(scores.values()) / len(scores)
    return scores


def _in_run_folder(entry: dict[str, Any], run_dir: Path, output_dir: Path) -> dict[str, Any]:
    """A stage's log entry with its checkpoint paths named as they will be once a replacement has moved in."""
    best = entry.get("best_checkpoint")
    if best is None or run_dir == output_dir:
        return entry
    return {**entry, "best_checkpoint": str(output_dir / Path(best).relative_to(run_dir))}
