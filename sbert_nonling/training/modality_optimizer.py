"""One optimizer per training source over the same parameters, stepping only the source of the current batch, and
the learning-rate schedules of its sub-optimizers stepped together as one scheduler."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler


class ModalityOptimizer(Optimizer):
    """Holds one optimizer per dataset (e.g. ``{"image": AdamW(lr=1e-6), "text": AdamW(lr=3e-5)}``) over shared
    parameters and steps only the :attr:`active` one (VisualCSE's Algorithm 1: each modality its own AdamW).

    To the Trainer it is one optimizer that wraps the active one: ``param_groups``, ``defaults`` and ``state`` *are*
    the active sub-optimizer's (the same objects), so fp16 loss scaling and clipping see each shared gradient once;
    ``state_dict`` holds every sub-optimizer's state. Their learning-rate schedules are
    :class:`ModalitySchedule`'s.

    Args:
        optimizers: dataset name -> the optimizer of the parameters that dataset's loss trains; the first is active
            until :meth:`set_active` names another.

    Example::

        import torch
        from sbert_nonling.training import ModalityOptimizer

        weight = torch.nn.Parameter(torch.zeros(2))
        optimizer = ModalityOptimizer(
            {"image": torch.optim.SGD([weight], lr=0.1), "text": torch.optim.SGD([weight], lr=1.0)}
        )
        optimizer.set_active("text")
        weight.grad = torch.ones(2)
        optimizer.step()  # the text SGD: weight is now [-1, -1]
    """

    def __init__(self, optimizers: dict[str, Optimizer]) -> None:
        # No Optimizer.__init__: torch has no optimizer over several optimizers, so this one wraps the active one as
        # torch's own wrapping optimizers do (PostLocalSGDOptimizer): its groups and state are the wrapped one's.
        if not optimizers:
            raise ValueError("ModalityOptimizer needs at least one optimizer.")
        self.optimizers = dict(optimizers)
        # every optimizer's parameters, each once, in order
        self._parameters = list(
            dict.fromkeys(
                parameter
                for optimizer in self.optimizers.values()
                for group in optimizer.param_groups
                for parameter in group["params"]
            )
        )
        self.set_active(next(iter(self.optimizers)))

    def set_active(self, name: str) -> None:
        """Make ``name``'s optimizer the one that steps (and whose groups, defaults and state this one shows).

        Args:
            name: a dataset name, a key of ``optimizers``.
        """
        if name not in self.optimizers:
            raise ValueError(f"No optimizer for {name!r}; optimizers: {list(self.optimizers)}.")
        self.active = name
        self.param_groups = self.optimizers[name].param_groups
        self.defaults = self.optimizers[name].defaults
        self.state = self.optimizers[name].state

    @torch.no_grad()
    def step(self, closure=None):
        return self.optimizers[self.active].step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of the optimizers' parameters (those they held when this one was built). Setting them
        to None (the default, what the trainer asks every step) visits each parameter once: the optimizers share most
        of them (the encoder).

        Args:
            set_to_none: set the gradients to None instead of zeroing them in place.
        """
        if not set_to_none:
            for optimizer in self.optimizers.values():
                optimizer.zero_grad(set_to_none=False)
            return
        for parameter in self._parameters:
            parameter.grad = None

    def state_dict(self) -> dict[str, Any]:
        return {name: optimizer.state_dict() for name, optimizer in self.optimizers.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        load_named_states(self.optimizers, state_dict, "Optimizer")
        self.set_active(self.active)  # load_state_dict builds new group dicts and state: show those


def load_named_states(owners: dict[str, Any], state_dict: dict[str, Any], kind: str) -> None:
    """Load ``state_dict`` (one state per dataset name) into ``owners``, the optimizers or schedulers of those names.

    Args:
        owners: dataset name -> optimizer or scheduler.
        state_dict: dataset name -> that owner's state dict (as saved from the same names).
        kind: what the owners are (``"Optimizer"``, ``"Scheduler"``), for the error when the names differ.
    """
    if set(state_dict) != set(owners):
        raise ValueError(f"{kind} state for {sorted(state_dict)} cannot be loaded into {sorted(owners)}.")
    for name, owner in owners.items():
        owner.load_state_dict(state_dict[name])


class ModalitySchedule:
    """The schedulers of a :class:`ModalityOptimizer`'s sub-optimizers as
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
