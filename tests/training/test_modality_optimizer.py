"""ModalityOptimizer: one optimizer per dataset over shared parameters; only the active one steps; one schedule for all."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sbert_nonling.training import ModalityOptimizer


def two_rates(parameter: nn.Parameter) -> ModalityOptimizer:
    return ModalityOptimizer({"image": torch.optim.SGD([parameter], lr=0.1), "text": torch.optim.SGD([parameter], lr=1.0)})


def test_only_the_active_optimizer_steps_with_its_own_rate():
    parameter = nn.Parameter(torch.zeros(2))
    optimizer = two_rates(parameter)
    assert optimizer.active == "image"  # the first one until told otherwise
    parameter.grad = torch.ones(2)
    optimizer.step()
    assert torch.allclose(parameter.detach(), torch.full((2,), -0.1))
    optimizer.set_active("text")
    optimizer.step()
    assert torch.allclose(parameter.detach(), torch.full((2,), -1.1))
    optimizer.zero_grad()
    assert parameter.grad is None
    with pytest.raises(ValueError, match=r"No optimizer for 'audio'; optimizers: \['image', 'text'\]"):
        optimizer.set_active("audio")
    with pytest.raises(ValueError, match="needs at least one optimizer"):
        ModalityOptimizer({})


def test_one_scheduler_scales_every_rate_and_keeps_their_ratio():
    optimizer = two_rates(nn.Parameter(torch.zeros(1)))
    assert optimizer.param_groups == [optimizer.optimizers["image"].param_groups[0], optimizer.optimizers["text"].param_groups[0]]
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5)
    assert [group["lr"] for group in optimizer.param_groups] == [0.05, 0.5]
    assert [group["lr"] for name in ("image", "text") for group in optimizer.optimizers[name].param_groups] == [0.05, 0.5]
    assert scheduler.get_last_lr() == [0.05, 0.5]


def test_state_dict_holds_every_optimizer_and_loads_back_into_the_same_names():
    parameter = nn.Parameter(torch.zeros(3))
    optimizer = ModalityOptimizer({"image": torch.optim.AdamW([parameter], lr=0.1), "text": torch.optim.AdamW([parameter], lr=0.2)})
    parameter.grad = torch.ones(3)
    optimizer.step()  # image only
    state = optimizer.state_dict()
    assert set(state) == {"image", "text"} and state["image"]["state"] and not state["text"]["state"]
    fresh = ModalityOptimizer({"image": torch.optim.AdamW([parameter], lr=0.1), "text": torch.optim.AdamW([parameter], lr=0.2)})
    fresh.load_state_dict(state)
    assert torch.equal(fresh.optimizers["image"].state[parameter]["exp_avg"], optimizer.optimizers["image"].state[parameter]["exp_avg"])
    assert fresh.param_groups[1] is fresh.optimizers["text"].param_groups[0]  # the groups point at the loaded dicts
    with pytest.raises(ValueError, match=r"Optimizer state for \['image', 'text'\] cannot be loaded into \['audio', 'text'\]"):
        ModalityOptimizer({"audio": torch.optim.AdamW([parameter]), "text": torch.optim.AdamW([parameter])}).load_state_dict(state)
