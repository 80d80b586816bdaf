"""The learning-rate schedules of a ModalityOptimizer's sub-optimizers, stepped together as one scheduler."""

from __future__ import annotations

import warnings
from typing import Any

from torch import Tensor
from torch.optim.lr_scheduler import LRScheduler

from sbert_nonling.training.modality_optimizer import load_named_states


class ModalitySchedule:
    """The schedulers of a :class:`~sbert_nonling.training.modality_optimizer.ModalityOptimizer`'s sub-optimizers as
    the Trainer's one ``lr_scheduler``: every optimizer step advances, and checkpoints save, all of them, so each
    modality keeps its own base rate under the same schedule. ``get_last_lr`` lists the rates in the order of
    ``schedules`` (transformers logs the first as ``learning_rate``); :meth:`last_rates` names them.

    Args:
        schedules: dataset name -> the scheduler of that dataset's optimizer.

    Example::

        import torch
        from sbert_nonling.training import ModalitySchedule

        weight = torch.nn.Parameter(torch.zeros(1))
        optimizers = {"text": torch.optim.SGD([weight], lr=1.0), "image": torch.optim.SGD([weight], lr=0.1)}
        schedulers = {
            name: torch.optim.lr_scheduler.ConstantLR(optimizer, factor=0.5)
            for name, optimizer in optimizers.items()
        }
        schedule = ModalitySchedule(schedulers)
        print(schedule.last_rates())  # {'text': 0.5, 'image': 0.05}
    """

    def __init__(self, schedules: dict[str, LRScheduler]) -> None:
        if not schedules:
            raise ValueError("ModalitySchedule needs at least one scheduler.")
        self.schedules = dict(schedules)
        #: The rates the last optimizer step was taken with (what transformers logs as ``learning_rate``).
        self.stepped_rates: dict[str, float | Tensor] = self.last_rates()

    def step(self) -> None:
        self.stepped_rates = self.last_rates()
        with warnings.catch_warnings():
            # Only one sub-optimizer steps: torch warns, wrongly here, that the others' schedulers stepped before them.
            warnings.filterwarnings(
                "ignore", message=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"
            )
            for schedule in self.schedules.values():
                schedule.step()

    def get_last_lr(self) -> list[float | Tensor]:  # as LRScheduler's (a rate may be a Tensor)
        return [rate for schedule in self.schedules.values() for rate in schedule.get_last_lr()]

    def last_rates(self) -> dict[str, float | Tensor]:
        """The current learning rate of each sub-optimizer's first parameter group, by dataset name."""
        return {name: schedule.get_last_lr()[0] for name, schedule in self.schedules.items()}

    def state_dict(self) -> dict[str, Any]:
        return {name: schedule.state_dict() for name, schedule in self.schedules.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore every schedule from a :meth:`state_dict`; a missing or unknown name is a ValueError.

        Args:
            state_dict: dataset name -> that schedule's state.
        """
        load_named_states(self.schedules, state_dict, "Scheduler")
