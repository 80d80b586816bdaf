"""One optimizer per training source over the same parameters, stepping only the source of the current batch."""

from __future__ import annotations

from typing import Any

import torch
from torch.optim import Optimizer


class ModalityOptimizer(Optimizer):
    """Holds one optimizer per dataset (e.g. ``{"image": AdamW(lr=1e-6), "text": AdamW(lr=3e-5)}``) over shared
    parameters and steps only the :attr:`active` one (VisualCSE's Algorithm 1: each modality its own AdamW).

    To the Trainer it is one optimizer that wraps the active one: ``param_groups``, ``defaults`` and ``state`` *are*
    the active sub-optimizer's (the same objects), so fp16 loss scaling and clipping see each shared gradient once;
    ``state_dict`` holds every sub-optimizer's state. Their learning-rate schedules are
    :class:`~sbert_nonling.training.modality_schedule.ModalitySchedule`'s.

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
