"""make_training_head: the training-only head kinds of the papers, by their shapes and functions."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sbert_nonling.util.heads import TRAINING_HEADS, make_training_head


def test_mlp_is_linear_then_tanh():
    head = make_training_head("mlp", 4)
    x = torch.randn(3, 4)
    torch.testing.assert_close(head(x), torch.tanh(head[0](x)))
    assert head[0].in_features == head[0].out_features == 4


def test_linear_gelu_layernorm_normalises_every_token():
    head = make_training_head("linear_gelu_layernorm", 8)
    out = head(torch.randn(2, 5, 8))  # per patch token
    assert out.shape == (2, 5, 8)
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
    assert isinstance(head[1], nn.GELU) and isinstance(head[2], nn.LayerNorm)


def test_linear_and_mlp_project_to_another_width():
    linear, mlp = make_training_head("linear", 4, 6), make_training_head("mlp", 4, 6)
    x = torch.randn(3, 4)
    assert [type(module) for module in linear] == [nn.Linear] and (linear[0].in_features, linear[0].out_features) == (
        4,
        6,
    )
    torch.testing.assert_close(linear(x), linear[0](x))
    assert mlp(x).shape == (3, 6)


def test_none_is_the_identity_and_an_unknown_kind_is_refused():
    x = torch.randn(2, 3)
    assert make_training_head("none", 3)(x) is x
    assert set(TRAINING_HEADS) == {"mlp", "linear", "linear_gelu_layernorm", "none"}
    with pytest.raises(
        ValueError, match=r"training_head='relu' must be one of \['mlp', 'linear', 'linear_gelu_layernorm', 'none'\]"
    ):
        make_training_head("relu", 3)
    with pytest.raises(ValueError, match="projection_head='relu' must be one of"):
        make_training_head("relu", 3, name="projection_head")
    with pytest.raises(ValueError, match="A 'none' head keeps the dimension"):
        make_training_head("none", 3, 4)
