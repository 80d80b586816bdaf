"""Frozen modules: eval mode whatever train() says, no gradient; a Frozen teacher left out of its owner's state."""

from __future__ import annotations

import torch
from torch import nn

from sbert_nonling.util.frozen import Frozen, FrozenModule


class Owner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.student = nn.Linear(4, 2)
        self.teacher = Frozen(nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.5)))


def test_a_frozen_teacher_stays_in_eval_mode_without_gradient_and_out_of_the_owner_s_state():
    owner = Owner().train()
    assert owner.student.training and not owner.teacher.training and not owner.teacher.module[1].training
    assert not any(parameter.requires_grad for parameter in owner.teacher.parameters())
    assert list(owner.state_dict()) == ["student.weight", "student.bias"]
    inputs = torch.randn(3, 4)
    outputs = owner.teacher(inputs)
    assert not outputs.requires_grad
    torch.testing.assert_close(outputs, owner.teacher(inputs))  # dropout off
    assert [id(parameter) for parameter in owner.parameters() if parameter.requires_grad] == [
        id(owner.student.weight),
        id(owner.student.bias),
    ]


def test_a_frozen_module_keeps_its_state_and_its_batch_statistics():
    class FrozenNormalization(FrozenModule):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.BatchNorm1d(4)
            self.freeze()

    frozen = FrozenNormalization()
    frozen.train()  # e.g. the trainer's model.train()
    frozen.norm(torch.randn(8, 4) + 3.0)
    assert not frozen.training and not frozen.norm.weight.requires_grad
    torch.testing.assert_close(frozen.norm.running_mean, torch.zeros(4))  # eval mode: no statistics updated
    assert set(frozen.state_dict()) >= {"norm.weight", "norm.running_mean"}
