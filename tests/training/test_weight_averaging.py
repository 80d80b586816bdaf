from __future__ import annotations

import pytest
import torch

from sbert_nonling.training.weight_averaging import average_state_dicts


def test_uniform_average_of_float_tensors_keeps_integer_buffers():
    states = [
        {"weight": torch.tensor([1.0, 2.0]), "half": torch.tensor([1.0], dtype=torch.float16), "ids": torch.arange(3)},
        {"weight": torch.tensor([3.0, 6.0]), "half": torch.tensor([2.0], dtype=torch.float16), "ids": torch.arange(3)},
        {"weight": torch.tensor([5.0, 1.0]), "half": torch.tensor([4.0], dtype=torch.float16), "ids": torch.arange(3)},
    ]
    averaged = average_state_dicts(states)
    torch.testing.assert_close(averaged["weight"], torch.tensor([3.0, 3.0]))
    assert averaged["half"].dtype == torch.float16 and averaged["half"].item() == pytest.approx(7 / 3, abs=1e-3)
    assert torch.equal(averaged["ids"], torch.arange(3))


def test_averaging_models_equals_the_mean_of_their_parameters(tiny_model):
    import copy

    other = copy.deepcopy(tiny_model)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(1.0)
    merged = copy.deepcopy(tiny_model)
    merged.load_state_dict(average_state_dicts([tiny_model.state_dict(), other.state_dict()]))
    for (name, mean), first, second in zip(merged.named_parameters(), tiny_model.parameters(), other.parameters()):
        torch.testing.assert_close(mean, (first + second) / 2, msg=name)


@pytest.mark.parametrize(
    ("states", "message"),
    [
        ([], "at least one"),
        ([{"a": torch.zeros(2)}, {"b": torch.zeros(2)}], "different keys"),
        ([{"a": torch.zeros(2)}, {"a": torch.zeros(3)}], "'a' has different shapes"),
        ([{"ids": torch.arange(2)}, {"ids": torch.arange(1, 3)}], "Non-float tensor 'ids' differs"),
    ],
)
def test_incompatible_states_are_rejected(states, message):
    with pytest.raises(ValueError, match=message):
        average_state_dicts(states)
