"""ModalitySchedule: every sub-optimizer's schedule stepped together, each keeping its own base rate; saved and
restored."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sbert_nonling.training import ModalitySchedule


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
