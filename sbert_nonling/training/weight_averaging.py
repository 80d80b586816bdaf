"""Uniform weight averaging of fine-tuned copies of one model (Pixel Linguist's "ensemble" of visual runs)."""

from __future__ import annotations

import torch
from torch import Tensor


def average_state_dicts(states: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The element-wise mean of ``states`` (state dicts of one architecture), as a model soup averages them:
    floating-point tensors averaged in float64 and cast back; other tensors (e.g. position ids) kept, and must agree.

    Args:
        states: state dicts of one architecture, at least one.

    Raises:
        ValueError: no states, or states whose keys, shapes or non-float values differ (naming the tensor).

    Example::

        import torch
        from sbert_nonling.training.weight_averaging import average_state_dicts

        # e.g. fine-tuned copies of one model
        model, run_a, run_b = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
        model.load_state_dict(average_state_dicts([run_a.state_dict(), run_b.state_dict()]))
    """
    if not states:
        raise ValueError("average_state_dicts needs at least one state dict.")
    first = states[0]
    for index, state in enumerate(states[1:], start=1):
        if state.keys() != first.keys():
            raise ValueError(
                f"State {index} has different keys than state 0 (e.g. {sorted(set(state) ^ set(first))[:5]})."
            )
    averaged = {}
    for name, tensor in first.items():
        tensors = [state[name] for state in states]
        shapes = {tuple(value.shape) for value in tensors}
        if len(shapes) > 1:
            raise ValueError(f"Tensor {name!r} has different shapes across states: {sorted(shapes)}.")
        if tensor.is_floating_point():
            averaged[name] = torch.stack([value.double() for value in tensors]).mean(dim=0).to(tensor.dtype)
        elif all(torch.equal(value, tensor) for value in tensors):
            averaged[name] = tensor.clone()
        else:
            raise ValueError(f"Non-float tensor {name!r} differs across states; it cannot be averaged.")
    return averaged
