"""SentenceTransformerTrainer that also checkpoints what the losses own (projection heads, learnable temperatures)."""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from typing import Any

import torch
from datasets import Dataset
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.base.sampler import BatchSamplers
from sentence_transformers.util import get_world_size
from torch import Tensor, nn
from torch.utils.data import BatchSampler
from transformers.trainer_utils import rotate_checkpoints

from sbert_nonling.data.images import ROW_COLUMN
from sbert_nonling.training.checkpoints import newest_intact_checkpoint, remove_complete_marker, write_complete_marker, write_failure
from sbert_nonling.training.preemption import PreemptionCallback, TrainingPreempted

logger = logging.getLogger(__name__)

LOSS_STATE_FILE = "loss_state.safetensors"


def loss_state_dict(losses: nn.Module | dict[str, nn.Module], model: nn.Module) -> dict[str, Tensor]:
    """The parameters and buffers the losses own, i.e. everything in their state dicts that is not the model's.

    Keys are ``<dataset name>.<key>``; a tensor shared by several losses (e.g. SimCSE's head, shared by the text loss
    and MultimodalAlignLoss) is stored once, under its first key.
    """
    model_tensors = {id(tensor) for tensor in (*model.parameters(), *model.buffers())}
    state, seen = {}, set()
    for name, loss in (losses.items() if isinstance(losses, dict) else [("loss", losses)]):
        for key, tensor in loss.state_dict(keep_vars=True).items():
            if id(tensor) in model_tensors or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            state[f"{name}.{key}"] = tensor.detach().cpu().contiguous()
    return state


def loss_parameters(losses: nn.Module | dict[str, nn.Module], model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters the losses own (not the model's), each once, in a fixed order."""
    model_parameters = {id(parameter) for parameter in model.parameters()}
    owned, seen = [], set()
    for loss in losses.values() if isinstance(losses, dict) else [losses]:
        for parameter in loss.parameters():
            if parameter.requires_grad and id(parameter) not in model_parameters and id(parameter) not in seen:
                seen.add(id(parameter))
                owned.append(parameter)
    return owned


def load_loss_state_dict(losses: nn.Module | dict[str, nn.Module], state: dict[str, Tensor]) -> None:
    """Copy a :func:`loss_state_dict` back into the losses' own tensors (in place, so shared tensors stay shared)."""
    targets = {}
    for name, loss in (losses.items() if isinstance(losses, dict) else [("loss", losses)]):
        for key, tensor in loss.state_dict(keep_vars=True).items():
            targets[f"{name}.{key}"] = tensor
    unknown = sorted(set(state) - set(targets))
    if unknown:
        raise ValueError(f"The checkpoint's loss state has entries the current losses lack: {unknown[:5]}.")
    for key, value in state.items():
        targets[key].data.copy_(value.to(targets[key].device))


def source_rows(dataset: Dataset) -> Dataset:
    """``dataset`` as stored, without its ``set_transform`` (and without the row-number column the two-view image
    datasets add): what a duplicate check should compare for media datasets, whose transform decodes and augments."""
    raw = dataset.with_format(None)
    return raw.remove_columns([ROW_COLUMN]) if ROW_COLUMN in raw.column_names else raw


def _same_inputs(inputs: list[Any], other: list[Any]) -> bool:
    """The same objects (e.g. one decoded audio clip in both view columns) or equal strings, item by item."""
    return len(inputs) == len(other) and all(
        item is other_item or (isinstance(item, str) and isinstance(other_item, str) and item == other_item)
        for item, other_item in zip(inputs, other)
    )


class ReuseIdenticalColumns:
    """Wraps a data collator's ``preprocess_fn``: a column whose inputs are those of the column before it (and whose
    prompt / task / max_length are too) gets a copy of that column's features instead of a second preprocessing.

    Unsupervised SimCSE's ``anchor`` and ``positive`` are the same sentences and AudioCSE's two view columns the same
    clip (SpecAugment is applied in the forward pass, per view): each batch is then tokenised / fbank'ed once.
    Preprocessing is deterministic, so the features are exactly those a second call would give; random per-view
    augmentation (images) happens in the dataset, so those views are never the same objects and are preprocessed
    separately.
    """

    def __init__(self, preprocess_fn) -> None:
        self.preprocess_fn = preprocess_fn
        self._previous: tuple[list[Any], dict[str, Any], dict[str, Any]] | None = None

    def __call__(self, inputs: list[Any], **kwargs) -> dict[str, Any]:
        if self._previous is not None:
            previous_inputs, previous_kwargs, previous_features = self._previous
            if previous_kwargs == kwargs and _same_inputs(previous_inputs, inputs):
                return dict(previous_features)
        features = self.preprocess_fn(inputs, **kwargs)
        self._previous = (inputs, kwargs, dict(features))
        return features


class NonLinguisticTrainer(SentenceTransformerTrainer):
    """SentenceTransformerTrainer whose checkpoints also hold the losses' own parameters.

    sentence-transformers optimises loss-owned parameters (MCSE's projection heads, SimCSE's training-only MLP, a
    learnable temperature) but neither saves them in checkpoints nor restores them on
    ``train(resume_from_checkpoint=...)``: a resumed run would continue with freshly initialised heads. This trainer
    writes them to ``loss_state.safetensors`` in every checkpoint next to the optimizer state and loads them back on
    resume. They never enter the saved model.

    A checkpoint counts as written only once everything in it is (model, optimizer and schedule states, loss state,
    RNG states, trainer state): its :data:`~sbert_nonling.training.checkpoints.COMPLETE_MARKER` file, which lists
    every file with its size and SHA-256, is written last
    (:func:`~sbert_nonling.training.checkpoints.write_complete_marker`), and only then are older
    checkpoints rotated out (``save_total_limit``), so a failed or interrupted save never costs an earlier
    checkpoint. ``train(resume_from_checkpoint=True)`` resumes from the newest complete checkpoint whose files still
    match the marker (:func:`~sbert_nonling.training.checkpoints.newest_intact_checkpoint`: a damaged one is
    skipped with a warning naming the file), or starts afresh with a warning if there is none. A write failure
    (disk full, no permission) stops the run with a
    :class:`~sbert_nonling.training.checkpoints.CheckpointWriteError` naming the folder and the free space.
    SIGTERM / SIGINT during ``train`` finish the current optimizer step, write a complete checkpoint and raise
    :class:`~sbert_nonling.training.preemption.TrainingPreempted` (:class:`PreemptionCallback`).
    transformers restores the RNG states only after the first batch after a resume is drawn (the data loader draws
    its own seed then); random data augmentation therefore must not use the global RNG to be exact across a resume:
    the two-view image datasets seed each item's views by (seed, row, pass) instead (:class:`TwoViewTransform`).

    Under DDP only the model is wrapped, so the gradients of loss-owned parameters would stay per-process and the
    heads of different processes would drift apart; this trainer averages them across processes after every
    backward pass, as DDP does for the model (every process must take the same kind of step, which the package's
    batch samplers guarantee).

    Identical columns (SimCSE's (s, s), AudioCSE's two views of one clip) are preprocessed once per batch
    (:class:`ReuseIdenticalColumns`). It also measures where training time goes: :attr:`step_seconds` and :attr:`step_counts` hold, per training
    dataset name (``"train"`` for a single dataset), the wall time of its forward + backward passes and how many
    batches it took (the optimizer step is not included), e.g. the image steps' share of a VisualCSE run.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if callable(getattr(self.data_collator, "preprocess_fn", None)):
            self.data_collator.preprocess_fn = ReuseIdenticalColumns(self.data_collator.preprocess_fn)
        self.step_seconds: dict[str, float] = defaultdict(float)
        self.step_counts: dict[str, int] = defaultdict(int)
        self.preemption = PreemptionCallback()
        self.add_callback(self.preemption)

    def get_batch_sampler(
        self,
        dataset: Dataset,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
    ) -> BatchSampler | None:
        """sentence-transformers' batch sampler, except that the no-duplicates check of a dataset with a
        ``set_transform`` (the image / audio datasets: decode + augment on read) compares its stored rows (file path
        or bytes, :func:`source_rows`) instead of reading every candidate through the transform, which decoded and
        augmented each image once more per check and compared PIL objects by their printed memory address."""
        no_duplicates = self.args.batch_sampler in (BatchSamplers.NO_DUPLICATES, BatchSamplers.NO_DUPLICATES_HASHED)
        if no_duplicates and isinstance(dataset, Dataset) and dataset.format["type"] == "custom":
            dataset = source_rows(dataset)
        return super().get_batch_sampler(dataset, batch_size, drop_last, valid_label_columns, generator, seed)

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs):
        if resume_from_checkpoint is True:
            resume_from_checkpoint = newest_intact_checkpoint(self.args.output_dir)
            if resume_from_checkpoint is None:
                logger.warning(f"No complete checkpoint in {self.args.output_dir}: training starts from the beginning.")
        with self.preemption.handling_signals():
            output = super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)
        if self.preemption.stop_signal is not None:
            checkpoint = os.path.join(self.args.output_dir, f"checkpoint-{self.state.global_step}")
            raise TrainingPreempted(self.preemption.stop_signal, checkpoint)
        return output

    def _save_checkpoint(self, model: nn.Module, trial=None) -> None:
        """transformers' checkpoint, then the completion marker, then the rotation of older checkpoints.

        Overridden (a private method: no public hook runs between transformers writing a checkpoint and rotating
        older ones out) so that rotation waits for the marker: transformers rotates inside ``_save_checkpoint``,
        which would delete an older complete checkpoint before this one is known to be complete.
        """
        run_dir = self._get_output_dir(trial=trial)
        folder = os.path.join(run_dir, f"checkpoint-{self.state.global_step}")
        if self.args.should_save:
            remove_complete_marker(folder)  # written again after a resume: it is incomplete until the new marker
        save_total_limit = self.args.save_total_limit
        self.args.save_total_limit = None  # no rotation inside transformers' save; done below, after the marker
        try:
            super()._save_checkpoint(model, trial)
            if self.args.should_save:
                write_complete_marker(folder, self.state.global_step)
        except (OSError, SafetensorError, RuntimeError) as error:  # torch.save reports a failed write as RuntimeError
            raise write_failure(folder, error) from error
        finally:
            self.args.save_total_limit = save_total_limit
        if self.args.should_save:
            rotate_checkpoints(run_dir, save_total_limit, self.state.best_model_checkpoint, use_mtime=True)

    def training_step(self, model: nn.Module, inputs: dict, num_items_in_batch: int | None = None) -> Tensor:
        name = inputs.get("dataset_name") or "train"
        start = time.perf_counter()
        loss = super().training_step(model, inputs, num_items_in_batch)
        world_size = get_world_size()
        if world_size > 1:
            for parameter in loss_parameters(self.loss, self.model):
                if parameter.grad is not None:
                    torch.distributed.all_reduce(parameter.grad)
                    parameter.grad /= world_size
        self.step_seconds[name] += time.perf_counter() - start
        self.step_counts[name] += 1
        return loss

    def _save_optimizer_and_scheduler(self, output_dir: str) -> None:
        super()._save_optimizer_and_scheduler(output_dir)
        state = loss_state_dict(self.loss, self.model)
        if state and self.args.should_save:
            save_file(state, os.path.join(output_dir, LOSS_STATE_FILE))

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        path = os.path.join(checkpoint, LOSS_STATE_FILE)
        if os.path.isfile(path):
            load_loss_state_dict(self.loss, load_file(path))
        elif loss_state_dict(self.loss, self.model):
            logger.warning(f"{checkpoint} has no {LOSS_STATE_FILE}: the losses' heads restart from their initialisation.")
