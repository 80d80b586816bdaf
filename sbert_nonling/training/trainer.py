"""SentenceTransformerTrainer with the package's training callbacks (checkpointed loss heads, marked checkpoints,
compiled losses, ...)."""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from safetensors import SafetensorError
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.base.sampler import BatchSamplers
from torch import nn
from torch.utils.data import BatchSampler
from transformers import TrainerState
from transformers.trainer_utils import TrainOutput, rotate_checkpoints

from sbert_nonling.data.images import ROW_COLUMN
from sbert_nonling.training.arguments import SELECTION_METRIC
from sbert_nonling.training.checkpoints import (
    CHECKPOINT_PREFIX,
    CheckpointWriteError,
    newest_intact_checkpoint,
    remove_complete_marker,
    verify_checkpoint,
    write_complete_marker,
    write_failure,
)
from sbert_nonling.training.finite_training import FiniteTrainingCallback
from sbert_nonling.training.loss_gradient_averaging import LossGradientAveragingCallback
from sbert_nonling.training.loss_state import restore_loss_state, save_loss_state
from sbert_nonling.training.preemption import PreemptionCallback, TrainingPreempted
from sbert_nonling.training.reuse_identical_columns import ReuseIdenticalColumns
from sbert_nonling.training.run_settings import write_run_settings
from sbert_nonling.training.training_args import NonLinguisticTrainingArguments

logger = logging.getLogger(__name__)

#: The file of a checkpoint folder that holds :attr:`NonLinguisticTrainer.step_seconds` and ``step_counts`` up to
#: that step, so that a resumed run's go on from them.
STEP_TIMES_FILE = "step_times.json"


def restore_model_weights(model: SentenceTransformer, checkpoint: str | os.PathLike) -> None:
    """Copy the weights of ``checkpoint`` (a trainer checkpoint of ``model``) into ``model``; a ValueError names any
    module class it names that ``model`` does not use (so no code the run did not already run is imported).

    Args:
        model: the model being trained.
        checkpoint: a checkpoint folder the trainer wrote for it.
    """
    named = []
    for name, key in (("modules.json", "type"), ("router_config.json", None)):
        path = os.path.join(checkpoint, name)
        if os.path.isfile(path):
            content = json.loads(Path(path).read_text(encoding="utf8"))
            named += [entry[key] for entry in content] if key else list(content.get("types", {}).values())
    foreign = sorted(
        set(named) - {f"{type(module).__module__}.{type(module).__qualname__}" for module in model.modules()}
    )
    if foreign:
        raise ValueError(
            f"{checkpoint} names module classes the model being trained does not use ({', '.join(foreign)}); "
            "it is not a checkpoint of this run."
        )
    loaded = type(model)(str(checkpoint), trust_remote_code=True, device=str(model.device))
    model.load_state_dict(loaded.state_dict())


def source_rows(dataset: Dataset) -> Dataset:
    """``dataset`` as stored, without its ``set_transform`` (and the two-view images' row-number column): what a
    duplicate check compares for media datasets, whose transform decodes and augments.

    Args:
        dataset: a training dataset, possibly with a ``set_transform``.
    """
    raw = dataset.with_format(None)
    return raw.remove_columns([ROW_COLUMN]) if ROW_COLUMN in raw.column_names else raw


def tensor_rows_with_dataset_name(dataset: Dataset, dataset_name: str) -> Dataset:
    """``dataset`` (read as torch tensors) with sentence-transformers' ``dataset_name`` column stored on every row, in
    the same format: sentence-transformers adds the name with a ``set_transform``, which replaces the format, so a
    caption dataset's image features would reach the collator as Python lists of floats and be made a tensor again
    there (fetching and collating 64 captions with 2048-d features: 50 ms instead of 4.4 on one CPU core,
    ``benchmarks/data_share.py``). A ``dataset_name`` column left by an earlier trainer is replaced.

    Args:
        dataset: a dataset whose format type is ``"torch"``.
        dataset_name: its name in the dict of training datasets.

    Example::

        import torch
        from sbert_nonling.data.captions import caption_feature_dataset
        from sbert_nonling.training.trainer import tensor_rows_with_dataset_name

        captions = caption_feature_dataset([("a.jpg", "a red car")], ["a.jpg"], torch.ones(1, 4))
        row = tensor_rows_with_dataset_name(captions, "captions")[0]
        # {"anchor": "a red car", "positive": "a red car", "label": tensor([1., 1., 1., 1.]),
        #  "dataset_name": "captions"}
    """
    form = dataset.format
    if "dataset_name" in dataset.column_names:  # named by an earlier trainer
        dataset = dataset.remove_columns("dataset_name")
    columns = None if form["columns"] is None else [*form["columns"], "dataset_name"]
    return dataset.add_column("dataset_name", [dataset_name] * len(dataset)).with_format(
        form["type"], columns=columns, output_all_columns=form["output_all_columns"], **form["format_kwargs"]
    )


class NonLinguisticTrainer(SentenceTransformerTrainer):
    """``SentenceTransformerTrainer`` for losses that own parameters and runs that must survive interruptions; it owns
    a run's checkpoint bookkeeping and its record (:meth:`training_record`, :meth:`best_dev_scores`).

    Every checkpoint it writes (``_save_checkpoint``, in this order, after transformers' files) also holds the losses'
    own parameters (:func:`~sbert_nonling.training.loss_state.save_loss_state`), the forward + backward seconds and
    batches per training dataset (:attr:`step_seconds`, :attr:`step_counts`, :data:`STEP_TIMES_FILE`), the run's
    :attr:`run_settings` (:func:`~sbert_nonling.training.run_settings.write_run_settings`) and, last, the completion
    marker (:func:`~sbert_nonling.training.checkpoints.write_complete_marker`); only then are older checkpoints
    rotated out (the arguments' ``save_total_limit``: :attr:`args` is a copy without it, so transformers never rotates
    before the marker). Resuming (``train``: the newest intact checkpoint for ``True``) loads the losses' parameters
    and the step times before transformers loads the weights. It adds :class:`LossGradientAveragingCallback`,
    :class:`FiniteTrainingCallback` (:attr:`finite_training`) and :class:`PreemptionCallback` (:attr:`preemption`).
    Its overrides preprocess identical columns once (``get_data_collator``), keep the tensors of a dict's dataset read
    as tensors (``add_dataset_name_column``: :func:`tensor_rows_with_dataset_name`), check media datasets for
    duplicates on :func:`source_rows` and stop on a non-finite loss (``training_step``). With
    :class:`~sbert_nonling.training.training_args.NonLinguisticTrainingArguments` it also compiles the losses
    (``compile_loss``: :meth:`compile_losses`) and pads text to a fixed length (``pad_to_max_length``).

    Args:
        train_dataset_name: what :attr:`step_seconds` / :attr:`step_counts` call a single training dataset, e.g.
            ``"text"`` (a dict of datasets keeps its names).
        *args, **kwargs: ``SentenceTransformerTrainer``'s.

    Further reading: docs/reliability.md ("The trainer's checkpoints and callbacks", "Exact resume").
    """

    def __init__(self, *args, train_dataset_name: str = "train", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.train_dataset_name = train_dataset_name
        self.dataset_losses: dict[str, list[torch.Tensor]] = {}
        #: Forward + backward seconds per training dataset name, over the whole run (a resumed one's included).
        self.step_seconds: dict[str, float] = defaultdict(float)
        #: Batches per training dataset name, over the whole run.
        self.step_counts: dict[str, int] = defaultdict(int)
        #: The run's settings, written into every checkpoint for a resume's check (None: no file, as for a trainer
        #: used without the application).
        self.run_settings: dict[str, Any] | None = None
        #: The settings accepted as changed by earlier resumes, written with :attr:`run_settings`.
        self.settings_changes: list[dict[str, Any]] = []
        self.preemption = PreemptionCallback()
        self.finite_training = FiniteTrainingCallback(self.loss)
        self.save_total_limit = self.args.save_total_limit
        self.args = copy.copy(self.args)  # rotation is the trainer's, after the marker: none by transformers
        self.args.save_total_limit = None
        if not self.args.fp16:
            # transformers' filter waits for the device every step (bool of isnan / isinf); a non-finite loss ends the
            # run before it is logged (FiniteTrainingCallback), so the filter would never change a logged value.
            self.args.logging_nan_inf_filter = False
        if isinstance(self.args, NonLinguisticTrainingArguments) and self.args.compile_loss:
            self.compile_losses(self.args.compile_backend, self.args.compile_mode)
        for callback in (LossGradientAveragingCallback(self.loss), self.finite_training, self.preemption):
            self.add_callback(callback)

    def execution(self) -> dict[str, Any]:
        """How this trainer runs its steps, as its arguments say: ``compile`` (the ``torch.compile`` backend and mode
        of its losses, or None: eager) and ``padding`` (``max_length``: every text batch padded to
        ``max_seq_length``, one shape; ``longest``: to its longest sentence)."""
        args = self.args
        if not isinstance(args, NonLinguisticTrainingArguments):  # sentence-transformers' own: eager, padded per batch
            return {"compile": None, "padding": "longest"}
        mode = f", {args.compile_mode}" if args.compile_mode else ""
        return {
            "compile": f"{args.compile_backend}{mode}" if args.compile_loss else None,
            "padding": "max_length" if args.pad_to_max_length else "longest",
        }

    def training_record(self) -> dict[str, Any]:
        """What a run records of this trainer's training once ``train`` has returned: ``best_checkpoint``,
        ``global_step``, ``dev_curve`` (``[[step, STS-B dev x100], ...]`` of the evaluations logged),
        :attr:`step_seconds`, :attr:`step_counts` and :meth:`execution`'s ``compile`` and ``padding``."""
        logged = self.state.log_history
        curve = [[entry["step"], 100.0 * entry[SELECTION_METRIC]] for entry in logged if SELECTION_METRIC in entry]
        return {
            "best_checkpoint": self.state.best_model_checkpoint,
            "global_step": self.state.global_step,
            "dev_curve": curve,
            "step_seconds": dict(self.step_seconds),
            "step_counts": dict(self.step_counts),
            **self.execution(),
        }

    def best_dev_scores(self) -> dict[str, float]:
        """The STS scores (x100, by task name) logged when the best checkpoint (``state.best_global_step``) was
        evaluated: the scores of the weights ``load_best_model_at_end`` gave the model; {} without a best
        checkpoint."""
        if self.state.best_model_checkpoint is None or self.state.best_global_step is None:
            return {}
        for entry in self.state.log_history:
            if entry.get("step") == self.state.best_global_step and SELECTION_METRIC in entry:
                prefix, suffix = "eval_", "_spearman_cosine"
                return {
                    key.removeprefix(prefix).removesuffix(suffix): 100.0 * value
                    for key, value in entry.items()
                    if key.startswith(prefix) and key.endswith(suffix)
                }
        return {}

    def compile_losses(self, backend: str = "inductor", mode: str | None = None) -> None:
        """Compile each training loss in place (``nn.Module.compile``: its model's forward and the loss in one
        graph, the names and state dicts unchanged); shapes that change between batches (text padded to the longest
        sentence) get one more, dynamic graph. The trainer calls it with the arguments' ``compile_backend`` and
        ``compile_mode`` when their ``compile_loss`` is set.

        Args:
            backend: the ``torch.compile`` backend.
            mode: the ``torch.compile`` mode (None: the default).
        """
        losses = self.loss.values() if isinstance(self.loss, dict) else [self.loss]
        for loss in {id(loss): loss for loss in losses}.values():
            loss.compile(backend=backend, mode=mode)

    def compute_loss(self, model, inputs, return_outputs: bool = False, num_items_in_batch=None):
        """sentence-transformers' loss; in training, a named dataset's loss is kept for the next :meth:`log`."""
        name = inputs.get("dataset_name")
        result = super().compute_loss(
            model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
        )
        if name is not None and model.training:
            loss = result[0] if isinstance(result, tuple) else result  # a tuple exactly when return_outputs
            self.dataset_losses.setdefault(name, []).append(loss.detach())
        return result

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """transformers' log, plus ``loss_<dataset>`` in a multi-dataset run: the mean loss of that dataset's batches
        since the last log, in this process (``loss`` mixes them all). A loss's terms (a loss returning a dict, e.g.
        DALR's caption batches) are logged by sentence-transformers as their means over the batches that returned
        them; a window without such a batch (only text batches since the last log) logs no term, where
        sentence-transformers would log 0 / 0 = NaN for each, which reads as divergence."""
        components = self.accum_loss_components["train"]
        if "loss" in logs and "steps" in components and not components["steps"].item():  # sync at logging only
            del components["steps"]  # sentence-transformers then logs no term; the next term re-creates it at 0
        if "loss" in logs and self.dataset_losses:
            logs = {
                **logs,
                **{
                    f"loss_{name}": round(torch.stack(losses).float().mean().item(), 4)
                    for name, losses in self.dataset_losses.items()
                },
            }
            self.dataset_losses = {}
        super().log(logs, start_time)

    def training_step(self, model: nn.Module, inputs: dict, num_items_in_batch=None) -> torch.Tensor:
        """transformers' training step (forward and backward), timed into :attr:`step_seconds` / :attr:`step_counts`
        under its dataset's name; its loss is kept on the device for :attr:`finite_training`, which raises
        ``TrainingDiverged`` naming the step of a NaN or infinite loss at the next step that logs, evaluates or saves,
        before anything is written (under fp16 the gradient scaler skips such steps itself)."""
        dataset = inputs.get("dataset_name", self.train_dataset_name)  # before sentence-transformers pops it
        started = time.perf_counter()
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.step_seconds[dataset] += time.perf_counter() - started
        self.step_counts[dataset] += 1
        if not self.args.fp16:
            self.finite_training.record_loss(loss, self.state.global_step + 1)
        return loss

    def get_data_collator(self, model, args, processing_class=None):
        """sentence-transformers' collator, its ``preprocess_fn`` wrapped in :class:`ReuseIdenticalColumns`; with the
        arguments' ``pad_to_max_length``, text is padded to the text route's ``max_seq_length`` (the
        ``processing_kwargs`` of sentence-transformers' ``Transformer.preprocess``; other routes ignore them)."""
        collator = super().get_data_collator(model=model, args=args, processing_class=processing_class)
        preprocess_fn = collator.preprocess_fn
        if isinstance(args, NonLinguisticTrainingArguments) and args.pad_to_max_length:
            preprocess_fn = functools.partial(preprocess_fn, processing_kwargs={"text": {"padding": "max_length"}})
        collator.preprocess_fn = ReuseIdenticalColumns(preprocess_fn)
        return collator

    def add_dataset_name_column(self, dataset, dataset_name: str | None = None):
        """sentence-transformers' ``dataset_name`` on the rows of each dataset of a dict; a dataset read as torch
        tensors keeps its format (:func:`tensor_rows_with_dataset_name`)."""
        if isinstance(dataset, Dataset) and dataset_name is not None and dataset.format["type"] == "torch":
            return tensor_rows_with_dataset_name(dataset, dataset_name)
        return super().add_dataset_name_column(dataset, dataset_name)

    def get_batch_sampler(self, dataset: Dataset, *args, **kwargs) -> BatchSampler | None:
        """sentence-transformers' batch sampler; the no-duplicates check of a dataset with a ``set_transform`` (media:
        decode + augment on read) compares its stored rows (:func:`source_rows`), not decoded objects."""
        no_duplicates = self.args.batch_sampler in (BatchSamplers.NO_DUPLICATES, BatchSamplers.NO_DUPLICATES_HASHED)
        if no_duplicates and isinstance(dataset, Dataset) and dataset.format["type"] == "custom":
            dataset = source_rows(dataset)
        return super().get_batch_sampler(dataset, *args, **kwargs)

    def train(self, resume_from_checkpoint: str | bool | None = None, *args, **kwargs) -> TrainOutput:
        assert self.args.output_dir is not None  # TrainingArguments fills its default ("trainer_output")
        if resume_from_checkpoint is True:
            resume_from_checkpoint = newest_intact_checkpoint(self.args.output_dir)
            if resume_from_checkpoint is None:
                logger.warning(
                    f"No complete checkpoint in {self.args.output_dir}: training starts from the beginning."
                )
        elif resume_from_checkpoint:
            verify_checkpoint(resume_from_checkpoint)
        if resume_from_checkpoint:
            finished = self._finish_complete_run(resume_from_checkpoint)
            if finished is not None:
                return finished
            # transformers loads the weights and its own states; not in _load_from_checkpoint, which also loads the
            # best checkpoint's weights at the end, where the heads and the step times must stay the run's
            self._restore_run_state(resume_from_checkpoint)
        with self.preemption.handling_signals():
            output = super().train(resume_from_checkpoint, *args, **kwargs)
        if self.preemption.stop_signal is not None:
            checkpoint = os.path.join(self.args.output_dir, f"{CHECKPOINT_PREFIX}{self.state.global_step}")
            raise TrainingPreempted(self.preemption.stop_signal, checkpoint)
        return output

    def _finish_complete_run(self, checkpoint: str) -> TrainOutput | None:
        """None unless ``checkpoint`` is past the last step (where transformers would take one step more); then end the
        run as the uninterrupted one ended: its trainer state, loss heads and (best checkpoint's) model weights."""
        started = time.time()
        state = TrainerState.load_from_json(os.path.join(checkpoint, "trainer_state.json"))
        if not state.global_step >= (self.args.max_steps if self.args.max_steps > 0 else state.max_steps) > 0:
            return None
        self.state = state
        weights = checkpoint
        if self.args.load_best_model_at_end and self.state.best_model_checkpoint:
            if os.path.isdir(self.state.best_model_checkpoint):
                weights = self.state.best_model_checkpoint
            else:
                logger.warning(
                    f"The best checkpoint {self.state.best_model_checkpoint} is gone; keeping {checkpoint}."
                )
        logger.info(
            f"Training finished at step {self.state.global_step} ({checkpoint}); loading {weights}, no step is taken."
        )
        restore_model_weights(self.model, weights)
        self._restore_run_state(checkpoint)
        losses = [entry["loss"] for entry in self.state.log_history if "loss" in entry]
        metrics = {
            "train_runtime": round(time.time() - started, 4),
            "train_loss": losses[-1] if losses else float("nan"),
        }
        return TrainOutput(self.state.global_step, metrics["train_loss"], metrics)

    def _restore_run_state(self, checkpoint: str) -> None:
        """The losses' parameters and the step times a checkpoint holds (its weights are loaded apart)."""
        restore_loss_state(checkpoint, self.loss, self.model)
        step_times = os.path.join(checkpoint, STEP_TIMES_FILE)
        if os.path.isfile(step_times):
            sums = json.loads(Path(step_times).read_text(encoding="utf8"))
            self.step_seconds = defaultdict(float, sums["step_seconds"])
            self.step_counts = defaultdict(int, sums["step_counts"])

    def _save_checkpoint(self, model: nn.Module, trial=None) -> None:
        """transformers' checkpoint (private, but no public hook runs before or around the writes), then the run's own
        files and the marker, then rotation: a non-finite loss since the last check raises first, a folder written
        again loses its old marker, and a failed write becomes a :class:`CheckpointWriteError` naming the folder."""
        run_dir = self._get_output_dir(trial=trial)
        folder = os.path.join(run_dir, f"{CHECKPOINT_PREFIX}{self.state.global_step}")
        # The losses since the last check, also for a save asked for after FiniteTrainingCallback's step end (a stop
        # signal, an epoch's end); raised before the try, which would report it (a RuntimeError) as a write failure.
        self.finite_training.check_losses(self.args.output_dir)
        if self.args.should_save:
            remove_complete_marker(folder)
        try:
            super()._save_checkpoint(model, trial)
            if self.args.should_save:
                self._write_run_state(folder)
        except CheckpointWriteError:  # already names the folder
            raise
        except (OSError, SafetensorError, RuntimeError) as error:  # torch.save reports a failed write as RuntimeError
            raise write_failure(folder, error) from error
        if self.args.should_save:
            rotate_checkpoints(run_dir, self.save_total_limit, self.state.best_model_checkpoint, use_mtime=True)

    def _write_run_state(self, folder: str) -> None:
        """Into a checkpoint transformers has written: the losses' parameters (not with ``save_only_model``), the step
        times, the run's settings, then the marker listing every file."""
        if not self.args.save_only_model:
            save_loss_state(folder, self.loss, self.model)
        with open(os.path.join(folder, STEP_TIMES_FILE), "w", encoding="utf8") as file:
            json.dump({"step_seconds": self.step_seconds, "step_counts": self.step_counts}, file, sort_keys=True)
        if self.run_settings is not None:
            write_run_settings(folder, self.run_settings, self.settings_changes)
        write_complete_marker(folder, self.state.global_step)
