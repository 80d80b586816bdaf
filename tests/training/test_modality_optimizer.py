"""ModalityOptimizer: one optimizer per dataset over shared parameters; only the active one steps. ModalitySchedule:
every sub-optimizer's schedule stepped together, each keeping its own base rate; saved and restored."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sbert_nonling.training import ModalityOptimizer, ModalitySchedule


def two_rates(parameter: nn.Parameter) -> ModalityOptimizer:
    return ModalityOptimizer(
        {"image": torch.optim.SGD([parameter], lr=0.1), "text": torch.optim.SGD([parameter], lr=1.0)}
    )


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


def test_zero_grad_clears_every_optimizer_s_gradients_or_zeroes_them_in_place():
    shared, image_only, text_only = (nn.Parameter(torch.zeros(2)) for _ in range(3))
    optimizer = ModalityOptimizer(
        {
            "image": torch.optim.SGD([shared, image_only], lr=0.1),
            "text": torch.optim.SGD([{"params": [text_only]}, {"params": [shared], "lr": 0.5}], lr=1.0),
        }
    )
    for parameter in (shared, image_only, text_only):
        parameter.grad = torch.ones(2)
    optimizer.zero_grad(set_to_none=False)
    assert all(torch.equal(parameter.grad, torch.zeros(2)) for parameter in (shared, image_only, text_only))
    optimizer.zero_grad()
    assert shared.grad is None and image_only.grad is None and text_only.grad is None


def test_groups_defaults_and_state_are_the_active_optimizer_s_each_parameter_once():
    parameter = nn.Parameter(torch.zeros(1))
    optimizer = ModalityOptimizer(
        {"image": torch.optim.SGD([parameter], lr=0.1, momentum=0.9), "text": torch.optim.SGD([parameter], lr=1.0)}
    )
    parameter.grad = torch.ones(1)
    optimizer.step()  # the image SGD keeps a momentum buffer
    assert optimizer.param_groups is optimizer.optimizers["image"].param_groups and optimizer.defaults["lr"] == 0.1
    assert optimizer.state is optimizer.optimizers["image"].state and "momentum_buffer" in optimizer.state[parameter]
    optimizer.set_active("text")
    assert optimizer.param_groups is optimizer.optimizers["text"].param_groups and optimizer.defaults["lr"] == 1.0
    assert optimizer.state is optimizer.optimizers["text"].state
    assert [p for group in optimizer.param_groups for p in group["params"]] == [parameter]


def test_fp16_loss_scaling_unscales_a_shared_parameter_once():
    """What accelerate does under fp16: scale, backward, unscale_ the optimizer; the gradient is the true one."""
    layer = nn.Linear(3, 2)
    optimizer = ModalityOptimizer(
        {"image": torch.optim.AdamW(layer.parameters()), "text": torch.optim.AdamW(layer.parameters())}
    )
    inputs = torch.randn(4, 3)
    layer(inputs).square().sum().backward()
    reference = layer.weight.grad.clone()
    optimizer.zero_grad()
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale(layer(inputs).square().sum()).backward()
    scaler.unscale_(optimizer)
    torch.testing.assert_close(layer.weight.grad, reference, rtol=1e-6, atol=0)
    scaler.step(optimizer)
    assert optimizer.optimizers["image"].state and not optimizer.optimizers["text"].state


def test_state_dict_holds_every_optimizer_and_loads_back_into_the_same_names():
    parameter = nn.Parameter(torch.zeros(3))
    optimizer = ModalityOptimizer(
        {"image": torch.optim.AdamW([parameter], lr=0.1), "text": torch.optim.AdamW([parameter], lr=0.2)}
    )
    parameter.grad = torch.ones(3)
    optimizer.step()  # image only
    state = optimizer.state_dict()
    assert set(state) == {"image", "text"} and state["image"]["state"] and not state["text"]["state"]
    fresh = ModalityOptimizer(
        {"image": torch.optim.AdamW([parameter], lr=0.1), "text": torch.optim.AdamW([parameter], lr=0.2)}
    )
    fresh.load_state_dict(state)
    assert torch.equal(
        fresh.optimizers["image"].state[parameter]["exp_avg"],
        optimizer.optimizers["image"].state[parameter]["exp_avg"],
    )
    assert fresh.param_groups[0] is fresh.optimizers["image"].param_groups[0]  # the groups point at the loaded dicts
    with pytest.raises(
        ValueError, match=r"Optimizer state for \['image', 'text'\] cannot be loaded into \['audio', 'text'\]"
    ):
        ModalityOptimizer(
            {"audio": torch.optim.AdamW([parameter]), "text": torch.optim.AdamW([parameter])}
        ).load_state_dict(state)


def decay(step: int) -> float:
    return 1.0 / (1 + step)


def schedules(parameter: nn.Parameter) -> ModalitySchedule:
    text, image = torch.optim.SGD([parameter], lr=1.0), torch.optim.SGD([parameter], lr=0.1)
    return ModalitySchedule(
        {
            "text": torch.optim.lr_scheduler.LambdaLR(text, decay),
            "image": torch.optim.lr_scheduler.LambdaLR(image, decay),
        }
    )


def test_one_step_scales_every_rate_and_keeps_their_ratio():
    schedule = schedules(nn.Parameter(torch.zeros(1)))
    assert schedule.get_last_lr() == [1.0, 0.1] and schedule.last_rates() == {"text": 1.0, "image": 0.1}
    schedule.step()
    assert schedule.get_last_lr() == [0.5, 0.05]
    assert [
        group["lr"] for name in ("text", "image") for group in schedule.schedules[name].optimizer.param_groups
    ] == [0.5, 0.05]


def test_state_dict_restores_every_schedule_and_refuses_other_names():
    parameter = nn.Parameter(torch.zeros(1))
    schedule = schedules(parameter)
    for _ in range(3):
        schedule.step()
    fresh = schedules(parameter)
    fresh.load_state_dict(schedule.state_dict())
    fresh.step(), schedule.step()
    assert fresh.get_last_lr() == schedule.get_last_lr() == [0.2, pytest.approx(0.02)]
    with pytest.raises(ValueError, match=r"Scheduler state for \['image', 'text'\] cannot be loaded into \['text'\]"):
        ModalitySchedule(
            {"text": torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([parameter]), lambda step: 1.0)}
        ).load_state_dict(schedule.state_dict())
    with pytest.raises(ValueError, match="needs at least one scheduler"):
        ModalitySchedule({})
