"""Stop a diverging run (non-finite loss or weights, NaN dev score) with an error naming the step, before it is saved."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

import torch
from torch import nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from sbert_nonling.training.checkpoints import last_complete_checkpoint
from sbert_nonling.training.loss_state import Losses, loss_state_dict


class TrainingDiverged(RuntimeError):
    """Training produced a non-finite loss, non-finite weights or a NaN dev score; nothing non-finite was saved."""


def non_finite_parameters(named_tensors: Iterable[tuple[str, torch.Tensor]]) -> list[str]:
    """The names of the tensors holding a NaN or an infinite value (one device synchronisation when all are finite)."""
    floating = [(name, tensor) for name, tensor in named_tensors if tensor.is_floating_point()]
    if not floating:
        return []
    device = floating[0][1].device
    finite = torch.stack([torch.isfinite(tensor).all().to(device) for _, tensor in floating])
    if bool(finite.all()):
        return []
    return [name for (name, _), ok in zip(floating, finite.tolist()) if not ok]


def diverged(what: str, step: int, output_dir: str | os.PathLike | None) -> TrainingDiverged:
    """The error a run stops with when ``what`` (e.g. ``"the loss is nan"``) happened at optimizer step ``step``."""
    kept = last_complete_checkpoint(output_dir) if output_dir else None
    checkpoint = f"the last checkpoint, {kept}, holds finite weights" if kept else "no checkpoint had been written"
    return TrainingDiverged(
        f"Training diverged at step {step}: {what}. Nothing non-finite was saved ({checkpoint}). Lower the learning "
        "rate (or check the data), then start the run again with --overwrite (overwrite=True)."
    )


def check_finite_loss(loss: torch.Tensor, step: int, output_dir: str | os.PathLike | None) -> None:
    """Raise :class:`TrainingDiverged` if the training loss of optimizer step ``step`` is NaN or infinite."""
    if not bool(torch.isfinite(loss).all()):
        raise diverged(f"the loss is {loss.float().mean().item()}", step, output_dir)


class FiniteTrainingCallback(TrainerCallback):
    """Stops training with :class:`TrainingDiverged` when a weight of the model or of the losses' heads is NaN or
    infinite (checked before a checkpoint is written and at the last step), or an evaluation's selection metric is NaN
    (transformers checks neither). Each step's loss is :func:`check_finite_loss`'s (NonLinguisticTrainer calls it).

    Args:
        loss: the loss, or the dict of losses, given to the trainer (its own parameters are checked too).
    """

    def __init__(self, loss: Losses) -> None:
        self.loss = loss

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model: nn.Module | None = None, **kwargs) -> None:
        if not (control.should_save or state.global_step >= state.max_steps):
            return
        assert model is not None  # the Trainer passes its model to every callback event
        tensors: list[tuple[str, torch.Tensor]] = [(f"model.{name}", parameter) for name, parameter in model.named_parameters()]
        tensors += list(loss_state_dict(self.loss, model).items())
        bad = non_finite_parameters(tensors)
        if bad:
            raise diverged(f"{len(bad)} weights hold NaN or infinite values (first: {bad[0]})", state.global_step, args.output_dir)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, metrics=None, **kwargs) -> None:
        name = args.metric_for_best_model
        if name is None or not metrics:
            return
        key = name if name.startswith("eval_") else f"eval_{name}"
        value = metrics.get(key)
        if isinstance(value, float) and math.isnan(value):
            raise diverged(f"the dev score {key} is NaN (constant or non-finite embeddings)", state.global_step, args.output_dir)
