"""LossGradientAveragingCallback in two real processes (gloo, CPU): loss-owned gradients become the mean over
processes; the model's gradients (DDP's job) and parameters without a gradient are left alone."""

from __future__ import annotations

import os

import torch
import torch.multiprocessing
from torch import nn
from transformers import TrainerControl, TrainerState, TrainingArguments

from sbert_nonling.training import LossGradientAveragingCallback


class HeadLoss(nn.Module):
    """A loss that holds the model (as sentence-transformers losses do) and owns a head and an unused parameter."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.head = nn.Linear(2, 2)
        self.unused = nn.Parameter(torch.ones(3))


def gradients_after_the_callback(rank: int, world_size: int, port: int, output: str) -> None:
    """Each process gives every gradient the value rank + 1, runs the callback, saves what the gradients became."""
    if world_size > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.distributed.init_process_group("gloo", rank=rank, world_size=world_size)
    model = nn.Linear(2, 2)
    loss = HeadLoss(model)
    for parameter in (*model.parameters(), *loss.head.parameters()):
        parameter.grad = torch.full_like(parameter, float(rank + 1))
    args, state, control = TrainingArguments(output_dir=output, report_to="none"), TrainerState(), TrainerControl()
    callback = LossGradientAveragingCallback({"text": loss})
    callback.on_train_begin(args, state, control, model=model)
    callback.on_pre_optimizer_step(args, state, control)
    torch.save(
        {"head": loss.head.weight.grad, "model": model.weight.grad, "unused": loss.unused.grad},
        os.path.join(output, f"rank{rank}.pt"),
    )
    if world_size > 1:
        torch.distributed.destroy_process_group()


def test_two_processes_end_with_the_mean_of_the_loss_gradients(tmp_path):
    port = 29500 + os.getpid() % 1000
    torch.multiprocessing.spawn(gradients_after_the_callback, args=(2, port, str(tmp_path)), nprocs=2)
    results = [torch.load(tmp_path / f"rank{rank}.pt") for rank in (0, 1)]
    for rank, result in enumerate(results):
        assert torch.equal(result["head"], torch.full((2, 2), 1.5))  # (1 + 2) / 2 in both processes
        assert torch.equal(result["model"], torch.full((2, 2), float(rank + 1)))  # the model's: untouched
        assert result["unused"] is None


def test_one_process_leaves_the_gradients_as_they_are(tmp_path):
    gradients_after_the_callback(0, 1, 0, str(tmp_path))
    result = torch.load(tmp_path / "rank0.pt")
    assert torch.equal(result["head"], torch.ones(2, 2)) and torch.equal(result["model"], torch.ones(2, 2))
