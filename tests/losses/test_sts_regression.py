"""STSRegressionLoss: cosine of head-transformed embeddings against the gold score, by hand; the contract."""

from __future__ import annotations

import math

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

from sbert_nonling.losses.sts_regression import STSRegressionLoss


def test_sts_regression_hand_computed_and_plain_cosine_equivalence(tiny_model, padded, identity_head):
    plain = STSRegressionLoss(tiny_model, hidden_dimension=None)
    assert isinstance(plain, CosineSimilarityLoss)
    # cos([1,0],[1,1]) = 0.7071 vs 1.0; cos([1,0],[0,1]) = 0 vs 0.5
    value = plain.compute_loss_from_embeddings(
        [padded([1.0, 0.0], [1.0, 0.0]), padded([1.0, 1.0], [0.0, 1.0])], torch.tensor([1.0, 0.5])
    )
    expected = ((1 - 1 / math.sqrt(2)) ** 2 + 0.25) / 2  # 0.16789322
    assert value.item() == pytest.approx(expected, abs=1e-6)
    # through the layer: ReLU([1, -1]) = [1, 0], ReLU([1, 1]) = [1, 1] -> cos 0.7071 vs 1.0
    transformed = STSRegressionLoss(tiny_model, head_layer=identity_head)
    value = transformed.compute_loss_from_embeddings([padded([1.0, -1.0]), padded([1.0, 1.0])], torch.tensor([1.0]))
    assert value.item() == pytest.approx((1 - 1 / math.sqrt(2)) ** 2, abs=1e-6)
    assert transformed.get_config_dict()["hidden_dimension"] == 2


def test_contract_on_the_model(tiny_model, check_task_loss_contract):
    check_task_loss_contract(STSRegressionLoss(tiny_model, 16), columns=2, labels=torch.tensor([0.9, 0.8, 0.1]))
