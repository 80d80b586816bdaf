"""Where training time goes: forward + backward seconds per training dataset."""

from __future__ import annotations

import functools
import json
import os
import time
from collections import defaultdict

from torch import nn
from torch.utils.hooks import RemovableHandle
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from sbert_nonling.training.checkpoints import CHECKPOINT_PREFIX, write_failure
from sbert_nonling.training.loss_state import Losses

#: The file of a checkpoint folder that holds the timer's sums up to that step, so a resumed run's go on from them.
STEP_TIMES_FILE = "step_times.json"


class StepTimerCallback(TrainerCallback):
    """Measures the wall time of every training batch's forward and backward passes (not the optimizer step, logging,
    evaluation or saving), per training dataset: :attr:`step_seconds` and :attr:`step_counts` hold, per dataset name,
    the summed seconds and the number of batches. The names are those of the trainer's dict of datasets (joined by
    ``"+"`` for a loss shared by several), or ``dataset_name`` for a single dataset. A forward pre-hook on each loss
    names the batch's dataset (callbacks are not told it). The sums are written into every checkpoint
    (:data:`STEP_TIMES_FILE`; add the callback before the ``CheckpointMarkerCallback``) and read back when a run
    resumes from one, so they count the whole run, not only its resumed steps.

    Args:
        loss: the loss, or the dict of losses, given to the trainer (``trainer.loss`` holds the same modules).
        dataset_name: the name of the one training dataset of a single loss, e.g. ``"text"`` (default ``"train"``).

    Example::

        from datasets import Dataset
        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from sbert_nonling.losses import SimCSELoss
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder
        from sbert_nonling.training import StepTimerCallback

        sentences = ["A man is playing a guitar.", "A woman slices an onion."]
        # offline: a tiny random encoder; e.g. "bert-base-uncased"
        model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))
        dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences})
        datasets = {"wiki": dataset, "captions": dataset}
        # e.g. {"image": image_loss, "text": text_loss}
        losses = {"wiki": SimCSELoss(model), "captions": SimCSELoss(model)}
        args = SentenceTransformerTrainingArguments(
            "checkpoints", max_steps=2, report_to="none", multi_dataset_batch_sampler="round_robin"
        )
        timer = StepTimerCallback(losses)
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=datasets, loss=losses, callbacks=[timer]
        )
        trainer.train()
        # seconds per batch
        print({name: timer.step_seconds[name] / timer.step_counts[name] for name in timer.step_counts})
    """

    def __init__(self, loss: Losses, dataset_name: str = "train") -> None:
        names: dict[int, tuple[nn.Module, list[str]]] = {}
        for name, module in loss.items() if isinstance(loss, dict) else [(dataset_name, loss)]:
            names.setdefault(id(module), (module, []))[1].append(name)
        self._named_losses = [(module, "+".join(dataset_names)) for module, dataset_names in names.values()]
        self.step_seconds: dict[str, float] = defaultdict(float)
        self.step_counts: dict[str, int] = defaultdict(int)
        self._hooks: list[RemovableHandle] = []
        self._batch_start: float | None = None
        self._batch_dataset: str | None = None

    def _loss_called(self, dataset: str, module: nn.Module, inputs: tuple) -> None:
        """A forward pre-hook on ``dataset``'s loss."""
        if self._batch_start is not None and self._batch_dataset is None:  # the first loss of a timed batch names it
            self._batch_dataset = dataset

    def _end_batch(self, restart: bool) -> None:
        """Count the batch being timed, if a loss ran, then time the next one (``restart``) or none."""
        if self._batch_start is not None and self._batch_dataset is not None:
            self.step_seconds[self._batch_dataset] += time.perf_counter() - self._batch_start
            self.step_counts[self._batch_dataset] += 1
        self._batch_dataset = None
        self._batch_start = time.perf_counter() if restart else None

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._remove_hooks()
        assert args.output_dir is not None  # TrainingArguments fills its default ("trainer_output")
        if state.global_step > 0:  # resumed: go on from the checkpoint's sums
            self.restore(os.path.join(args.output_dir, f"{CHECKPOINT_PREFIX}{state.global_step}"))
        self._hooks = [
            module.register_forward_pre_hook(functools.partial(self._loss_called, dataset))
            for module, dataset in self._named_losses
        ]

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._remove_hooks()
        self._batch_start = None

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._end_batch(restart=True)  # nothing to count: the last step's batches ended before its optimizer step

    def on_substep_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self._end_batch(restart=True)

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs
    ) -> None:
        self._end_batch(restart=False)

    def restore(self, checkpoint: str) -> None:
        """Take the sums a checkpoint holds (:data:`STEP_TIMES_FILE`), if it holds them: a run resumed from it, or
        finished from it without a step, counts its batches from the start.

        Args:
            checkpoint: the checkpoint folder.
        """
        saved = os.path.join(checkpoint, STEP_TIMES_FILE)
        if os.path.isfile(saved):
            with open(saved, encoding="utf8") as file:
                sums = json.load(file)
            self.step_seconds = defaultdict(float, sums["step_seconds"])
            self.step_counts = defaultdict(int, sums["step_counts"])

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if not args.should_save:
            return
        assert args.output_dir is not None
        folder = os.path.join(args.output_dir, f"{CHECKPOINT_PREFIX}{state.global_step}")
        try:
            with open(os.path.join(folder, STEP_TIMES_FILE), "w", encoding="utf8") as file:
                json.dump({"step_seconds": self.step_seconds, "step_counts": self.step_counts}, file, sort_keys=True)
        except OSError as error:
            raise write_failure(folder, error) from error

    def _remove_hooks(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
