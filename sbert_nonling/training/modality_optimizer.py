"""One optimizer per training source over the same parameters, stepping only the source of the current batch."""

from __future__ import annotations

from typing import Any

import torch
from torch.optim import Optimizer


class ModalityOptimizer(Optimizer):
    """Holds one optimizer per dataset (e.g. ``{"image": AdamW(lr=1e-6), "text": AdamW(lr=3e-5)}``) over shared
    parameters and steps only the :attr:`active` one (VisualCSE's Algorithm 1: each modality its own AdamW).

    To the Trainer it is one optimizer: ``param_groups`` are the *active* sub-optimizer's groups (the same dicts), so
    fp16 loss scaling and clipping see each shared gradient once (docs/reliability.md); ``state_dict`` holds every
    sub-optimizer's state. Their schedules are :class:`~sbert_nonling.training.modality_schedule.ModalitySchedule`'s.

    Example::

        import torch
        from sbert_nonling.training import ModalityOptimizer

        weight = torch.nn.Parameter(torch.zeros(2))
        optimizer = ModalityOptimizer({"image": torch.optim.SGD([weight], lr=0.1), "text": torch.optim.SGD([weight], lr=1.0)})
        optimizer.set_active("text")
        weight.grad = torch.ones(2)
        optimizer.step()  # the text SGD: weight is now [-1, -1]
    """

    def __init__(self, optimizers: dict[str, Optimizer]) -> None:
        if not optimizers:
            raise ValueError("ModalityOptimizer needs at least one optimizer.")
        self.optimizers = dict(optimizers)
        self.active = next(iter(self.optimizers))
        # Optimizer.__init__'s bookkeeping over the shared parameters, each once; then the active one's groups are used.
        parameters = {
            id(parameter): parameter
            for optimizer in self.optimizers.values()
            for group in optimizer.param_groups
            for parameter in group["params"]
        }
        super().__init__(list(parameters.values()), dict(self.optimizers[self.active].defaults))
        self.set_active(self.active)

    def set_active(self, name: str) -> None:
        """Make ``name``'s optimizer the one that steps (and whose groups ``param_groups`` lists)."""
        if name not in self.optimizers:
            raise ValueError(f"No optimizer for {name!r}; optimizers: {list(self.optimizers)}.")
        self.active = name
        self.param_groups = self.optimizers[name].param_groups
        self.defaults = self.optimizers[name].defaults

    @torch.no_grad()
    def step(self, closure=None):
        return self.optimizers[self.active].step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers.values():
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {name: optimizer.state_dict() for name, optimizer in self.optimizers.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        load_named_states(self.optimizers, state_dict, "Optimizer")
        self.set_active(self.active)  # load_state_dict builds new group dicts: point at them again


def load_named_states(owners: dict[str, Any], state_dict: dict[str, Any], kind: str) -> None:
    """Load ``state_dict`` (one state per dataset name) into ``owners``, the optimizers or schedulers of those names."""
    if set(state_dict) != set(owners):
        raise ValueError(f"{kind} state for {sorted(state_dict)} cannot be loaded into {sorted(owners)}.")
    for name, owner in owners.items():
        owner.load_state_dict(state_dict[name])
