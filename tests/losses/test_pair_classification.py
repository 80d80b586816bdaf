"""PairClassificationLoss: the bilinear head by hand, the concat head as SoftmaxLoss's formula, the contract."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import SoftmaxLoss

from sbert_nonling.losses.pair_classification import PairClassificationLoss


def test_pair_classification_bilinear_hand_computed(tiny_model, padded):
    loss = PairClassificationLoss(tiny_model, num_labels=3, pair_head="bilinear", hidden_dimension=None)
    with torch.no_grad():
        loss.classifier.weight.zero_()
        loss.classifier.weight[0, 0, 0] = 1.0  # z_0 = u_0 * v_0, z_1 = z_2 = 0
        loss.classifier.bias.zero_()
    value = loss.compute_loss_from_embeddings([padded([1.0]), padded([2.0])], torch.tensor([0]))
    assert value.item() == pytest.approx(math.log(1 + 2 * math.exp(-2)), abs=1e-6)  # 0.2395447
    assert loss.get_config_dict()["pair_head"] == "bilinear"
    with pytest.raises(ValueError, match="head='cosine' must be one of"):
        PairClassificationLoss(tiny_model, num_labels=3, pair_head="cosine")
    with pytest.raises(ValueError, match="expects two text columns"):
        loss.compute_loss_from_embeddings([torch.zeros(1, 32)], torch.tensor([0]))


def test_pair_classification_concat_equals_softmax_loss_formula(tiny_model):
    torch.manual_seed(0)
    loss = PairClassificationLoss(tiny_model, num_labels=3, pair_head="concat", hidden_dimension=None)
    assert isinstance(loss, SoftmaxLoss) and loss.classifier.in_features == 3 * 32
    u, v, labels = torch.randn(4, 32), torch.randn(4, 32), torch.tensor([0, 1, 2, 1])
    logits = torch.cat([u, v, (u - v).abs()], dim=1) @ loss.classifier.weight.T + loss.classifier.bias
    torch.testing.assert_close(loss.compute_loss_from_embeddings([u, v], labels), F.cross_entropy(logits, labels))


def test_contract_on_the_model(tiny_model, check_task_loss_contract):
    check_task_loss_contract(
        PairClassificationLoss(tiny_model, 3, hidden_dimension=16), columns=2, labels=torch.tensor([0, 1, 2])
    )
