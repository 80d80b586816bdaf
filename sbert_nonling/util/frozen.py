"""Frozen modules: no gradient, always in eval mode; a frozen teacher is also left out of its owner's state."""

from __future__ import annotations

from typing import Any, Self

import torch
from torch import nn


class FrozenModule(nn.Module):
    """A module frozen as a whole (the data side's CLIP and image CNN; :class:`Frozen`'s teachers): ``train(mode)``
    leaves it, and every module in it, in eval mode, so the ``train()`` of a module that holds it (the trainer's
    ``model.train()`` reaches a loss's teachers too) changes nothing; :meth:`freeze`, called once its sub-modules are
    set, puts it in eval mode and turns its parameters' gradients off. Its ``state_dict`` holds its tensors.

    Example::

        from torch import nn
        from sbert_nonling.util.frozen import FrozenModule

        class FrozenProjection(FrozenModule):
            def __init__(self) -> None:
                super().__init__()
                self.linear = nn.Linear(4, 2)
                self.freeze()

        projection = FrozenProjection().train()
        print(projection.training, projection.linear.weight.requires_grad)  # False False
    """

    def train(self, mode: bool = True) -> Self:
        """Eval mode, whatever ``mode`` says.

        Args:
            mode: ignored (``nn.Module.train``'s argument).
        """
        return super().train(False)

    def freeze(self) -> Self:
        """Eval mode and no gradient for every parameter it holds now."""
        return self.eval().requires_grad_(False)


def _drop_own_state(module: nn.Module, state_dict: dict[str, Any], prefix: str, local_metadata: Any) -> None:
    """A ``state_dict`` post-hook of :class:`Frozen`: removes its tensors (the keys under its ``prefix``) from the
    state dict its owner builds."""
    for key in [key for key in state_dict if key.startswith(prefix)]:
        del state_dict[key]


class Frozen(FrozenModule):
    """``module`` frozen inside the module that owns it (a loss's teacher): no gradient, so never in the optimizer;
    always in eval mode (dropout off: a teacher's outputs are deterministic); run under ``torch.no_grad``; and left
    out of the owner's ``state_dict``, so checkpoints do not store it (the owner builds it again, e.g. from its
    name). As a sub-module it still moves with its owner to a device. ``module`` itself is frozen in place.

    Args:
        module: the module to freeze, e.g. a teacher SentenceTransformer.

    Example::

        import torch
        from torch import nn
        from sbert_nonling.util.frozen import Frozen

        class Distillation(nn.Module):
            def __init__(self, student: nn.Module, teacher: nn.Module) -> None:
                super().__init__()
                self.student, self.teacher = student, Frozen(teacher)

        loss = Distillation(nn.Linear(4, 2), nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.5))).train()
        print(list(loss.state_dict()), loss.teacher.training)  # ['student.weight', 'student.bias'] False
        print(loss.teacher(torch.randn(3, 4)).requires_grad)  # False
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module
        self.freeze()
        self.register_state_dict_post_hook(_drop_own_state)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``module``'s output, without gradient.

        Args:
            args: ``module``'s positional arguments.
            kwargs: ``module``'s keyword arguments.
        """
        with torch.no_grad():
            return self.module(*args, **kwargs)
