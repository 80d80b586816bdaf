"""One optimizer per training source over the same parameters, stepping only the source of the current batch."""

from __future__ import annotations

from typing import Any

import torch
from torch.optim import Optimizer


class ModalityOptimizer(Optimizer):
    """Holds one optimizer per dataset (e.g. ``{"image": AdamW(lr=1e-6), "text": AdamW(lr=3e-5)}``) over shared
    parameters, and steps only the :attr:`active` one: VisualCSE's Algorithm 1, where the image batch is
    back-propagated and stepped by its own AdamW (own state, own learning rate) before the text batch is stepped by
    the text AdamW.

    What it adds over ``torch.optim``: it presents the sub-optimizers to the transformers Trainer as one optimizer.
    ``param_groups`` are the sub-optimizers' groups (the same dict objects), so one learning-rate scheduler scales
    every modality's learning rate by the same schedule while each keeps its own base rate; ``state_dict`` holds
    every sub-optimizer's state, so checkpoints resume each modality's Adam moments.
    """

    def __init__(self, optimizers: dict[str, Optimizer]) -> None:
        if not optimizers:
            raise ValueError("ModalityOptimizer needs at least one optimizer.")
        self.optimizers = dict(optimizers)
        self.active = next(iter(self.optimizers))
        # Optimizer.__init__ sets up hooks and bookkeeping; the real groups are the sub-optimizers' own dicts.
        super().__init__([torch.zeros(0, requires_grad=True)], {})
        self.param_groups = [group for optimizer in self.optimizers.values() for group in optimizer.param_groups]
        self.defaults = next(iter(self.optimizers.values())).defaults

    def set_active(self, name: str) -> None:
        if name not in self.optimizers:
            raise ValueError(f"No optimizer for {name!r}; optimizers: {list(self.optimizers)}.")
        self.active = name

    @torch.no_grad()
    def step(self, closure=None):
        return self.optimizers[self.active].step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers.values():
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {name: optimizer.state_dict() for name, optimizer in self.optimizers.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if set(state_dict) != set(self.optimizers):
            raise ValueError(f"Optimizer state for {sorted(state_dict)} cannot be loaded into {sorted(self.optimizers)}.")
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state_dict[name])
        # load_state_dict builds new group dicts: point at them again.
        self.param_groups = [group for optimizer in self.optimizers.values() for group in optimizer.param_groups]
