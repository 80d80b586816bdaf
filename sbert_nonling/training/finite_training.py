"""Stop a diverging run (non-finite loss or weights, NaN dev score) with an error naming the step, before it is saved.

Ordinary training steps never wait for the device: each step's loss is kept on it and checked at the next step that
synchronises anyway (a logging, evaluation or save step, or the last one)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

import torch
from torch import nn
from torch.nn.utils import get_total_norm
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from sbert_nonling.training.checkpoints import last_complete_checkpoint
from sbert_nonling.training.loss_state import Losses, loss_state_dict


class TrainingDiverged(RuntimeError):
    """Training produced a non-finite loss, non-finite weights or a NaN dev score; nothing non-finite was saved."""


#: Recorded step losses are stacked into one tensor every this many steps (a bounded list between checks, no sync).
LOSS_CHUNK = 1024


def non_finite_parameters(named_tensors: Iterable[tuple[str, torch.Tensor]]) -> list[str]:
    """The names of the tensors holding a NaN or an infinite value. All finite costs one device synchronisation and
    one batched reduction (the largest absolute value of every tensor, which is NaN or infinite exactly when one of
    them is), not one per tensor.

    Args:
        named_tensors: ``(name, tensor)`` pairs, e.g. ``model.named_parameters()``; non-float tensors are skipped.
    """
    floating = [(name, tensor) for name, tensor in named_tensors if tensor.is_floating_point()]
    if not floating:
        return []
    if bool(torch.isfinite(get_total_norm([tensor for _, tensor in floating], norm_type=math.inf))):
        return []
    return [name for name, tensor in floating if not bool(torch.isfinite(tensor).all())]


def diverged(what: str, step: int, output_dir: str | os.PathLike | None) -> TrainingDiverged:
    """The error a run stops with when ``what`` happened at optimizer step ``step``.

    Args:
        what: what went wrong, e.g. ``"the loss is nan"``.
        step: the optimizer step it happened at.
        output_dir: the trainer's checkpoint folder, whose last complete checkpoint the message names (None: none).
    """
    kept = last_complete_checkpoint(output_dir) if output_dir else None
    checkpoint = f"the last checkpoint, {kept}, holds finite weights" if kept else "no checkpoint had been written"
    return TrainingDiverged(
        f"Training diverged at step {step}: {what}. Nothing non-finite was saved ({checkpoint}). Lower the learning "
        "rate (or check the data), then start the run again with --overwrite (RunOptions(overwrite=True))."
    )


def check_finite_loss(loss: torch.Tensor, step: int, output_dir: str | os.PathLike | None) -> None:
    """Raise :class:`TrainingDiverged` if the training loss of optimizer step ``step`` is NaN or infinite.

    Args:
        loss: the training loss.
        step: its optimizer step.
        output_dir: the trainer's checkpoint folder (the message names its last complete checkpoint).
    """
    if not bool(torch.isfinite(loss).all()):
        raise diverged(f"the loss is {loss.float().mean().item()}", step, output_dir)


class FiniteTrainingCallback(TrainerCallback):
    """Stops training with :class:`TrainingDiverged` when a training loss given to :meth:`record_loss` was NaN or
    infinite (checked at the end of every step that logs, evaluates or saves, and of the last step: naming the first
    such step), when a weight of the model or of the losses' heads is NaN or infinite (checked before a checkpoint is
    written and at the last step), or when an evaluation's selection metric is NaN (transformers checks none of them).
    Between those steps nothing waits for the device (no host-device synchronisation).

    Args:
        loss: the loss, or the dict of losses, given to the trainer (its own parameters are checked too).
    """

    def __init__(self, loss: Losses) -> None:
        self.loss = loss
        self._steps: list[int] = []
        self._losses: list[torch.Tensor] = []
        self._loss_chunks: list[torch.Tensor] = []

    def record_loss(self, loss: torch.Tensor, step: int) -> None:
        """Keep the training loss of optimizer step ``step`` for the next check, on its device (no synchronisation).

        Args:
            loss: the detached, scalar training loss.
            step: its optimizer step.
        """
        self._steps.append(step)
        self._losses.append(loss)
        if len(self._losses) == LOSS_CHUNK:
            self._loss_chunks.append(torch.stack(self._losses))
            self._losses = []

    def check_losses(self, output_dir: str | os.PathLike | None) -> None:
        """Raise :class:`TrainingDiverged` naming the first recorded step whose loss was NaN or infinite (one device
        synchronisation), and forget the recorded losses.

        Args:
            output_dir: the trainer's checkpoint folder (the message names its last complete checkpoint).
        """
        if not self._steps:
            return
        chunks = self._loss_chunks + ([torch.stack(self._losses)] if self._losses else [])
        steps, values = self._steps, torch.cat(chunks)
        self._steps, self._losses, self._loss_chunks = [], [], []
        finite = torch.isfinite(values)
        if not bool(finite.all()):
            first = finite.tolist().index(False)
            check_finite_loss(values[first], steps[first], output_dir)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        model: nn.Module = kwargs["model"]  # the Trainer passes its model to every callback event
        last = state.global_step >= state.max_steps
        if control.should_log or control.should_evaluate or control.should_save or last:
            self.check_losses(args.output_dir)
        if not (control.should_save or last):
            return
        tensors: list[tuple[str, torch.Tensor]] = [
            (f"model.{name}", parameter) for name, parameter in model.named_parameters()
        ]
        tensors += list(loss_state_dict(self.loss, model).items())
        bad = non_finite_parameters(tensors)
        if bad:
            raise diverged(
                f"{len(bad)} weights hold NaN or infinite values (first: {bad[0]})", state.global_step, args.output_dir
            )

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        self.check_losses(args.output_dir)  # a run stopped early by another callback, without a last step

    def on_evaluate(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, metrics=None, **kwargs
    ) -> None:
        name = args.metric_for_best_model
        if name is None or not metrics:
            return
        key = name if name.startswith("eval_") else f"eval_{name}"
        value = metrics.get(key)
        if isinstance(value, float) and math.isnan(value):
            raise diverged(
                f"the dev score {key} is NaN (constant or non-finite embeddings)", state.global_step, args.output_dir
            )
