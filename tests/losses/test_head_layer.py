"""HeadLayer: the first layer of a training-only task head, shareable between task losses."""

from __future__ import annotations

import pytest
import torch

from sbert_nonling.losses.head_layer import HeadLayer
from sbert_nonling.losses.pair_classification import PairClassificationLoss
from sbert_nonling.losses.sts_regression import STSRegressionLoss
from sbert_nonling.training.loss_state import loss_parameters, loss_state_dict


def test_head_layer_shape_and_errors():
    assert HeadLayer(32, 64, 0.3)(torch.randn(5, 32)).shape == (5, 64)
    assert HeadLayer(32, 64, 0.3).get_config_dict() == {
        "embedding_dimension": 32,
        "hidden_dimension": 64,
        "dropout": 0.3,
    }
    with pytest.raises(ValueError, match="dropout=1.0 must be in"):
        HeadLayer(32, 64, 1.0)
    with pytest.raises(ValueError, match="hidden_dimension=0 must be positive"):
        HeadLayer(32, 0)


def test_it_is_linear_then_relu(identity_head, padded):
    assert torch.equal(identity_head(padded([1.0, -2.0], [-0.5, 3.0])), torch.tensor([[1.0, 0.0], [0.0, 3.0]]))


def test_shared_layer_is_one_set_of_parameters_stored_once(tiny_model):
    shared = HeadLayer(32, 16, 0.3)
    losses = {
        "pair_classification": PairClassificationLoss(tiny_model, 3, head_layer=shared),
        "sts": STSRegressionLoss(tiny_model, head_layer=shared),
    }
    assert losses["pair_classification"].head_layer is losses["sts"].head_layer
    owned = loss_parameters(losses, tiny_model)
    assert len(owned) == 4  # the shared linear (weight, bias) once + the bilinear classifier (weight, bias)
    state = loss_state_dict(losses, tiny_model)
    assert sum(key.endswith("head_layer.linear.weight") for key in state) == 1
