"""HeadLayer, SentenceClassificationLoss, PairClassificationLoss and STSRegressionLoss: hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import (
    CosineSimilarityLoss,
    SoftmaxLoss,
)

from sbert_nonling.losses.head_layer import HeadLayer
from sbert_nonling.losses.pair_classification import PairClassificationLoss
from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss
from sbert_nonling.losses.sts_regression import STSRegressionLoss
from sbert_nonling.training.trainer import loss_parameters, loss_state_dict


def _padded(*rows, dim=32):
    """Rows of a (len(rows), dim) tensor with the given leading values and zeros after."""
    out = torch.zeros(len(rows), dim)
    for index, row in enumerate(rows):
        out[index, : len(row)] = torch.tensor(row, dtype=torch.float)
    return out


def _identity_head(dim=32, hidden=2):
    layer = HeadLayer(dim, hidden, dropout=0.0)
    with torch.no_grad():
        layer.linear.weight.zero_()
        layer.linear.weight[:, :hidden] = torch.eye(hidden)
        layer.linear.bias.zero_()
    return layer


def test_head_layer_shape_and_errors():
    assert HeadLayer(32, 64, 0.3)(torch.randn(5, 32)).shape == (5, 64)
    assert HeadLayer(32, 64, 0.3).get_config_dict() == {"embedding_dimension": 32, "hidden_dimension": 64, "dropout": 0.3}
    with pytest.raises(ValueError, match="dropout=1.0 must be in"):
        HeadLayer(32, 64, 1.0)
    with pytest.raises(ValueError, match="hidden_dimension=0 must be positive"):
        HeadLayer(32, 0)


def test_sentence_classification_hand_computed(tiny_model):
    loss = SentenceClassificationLoss(tiny_model, num_labels=2, hidden_dimension=None)
    with torch.no_grad():
        loss.classifier.weight.zero_()
        loss.classifier.weight[0, 0] = loss.classifier.weight[1, 1] = 1.0
        loss.classifier.bias.zero_()
    # logits [2, 0] with label 0 and [0, 1] with label 0
    value = loss.compute_loss_from_embeddings([_padded([2.0, 0.0], [0.0, 1.0])], torch.tensor([0, 0]))
    expected = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(1))) / 2  # 0.72009485
    assert value.item() == pytest.approx(expected, abs=1e-6) == pytest.approx(0.72009485, abs=1e-6)
    # with a hidden layer: ReLU([-1, 3]) = [0, 3] -> logits [0, 3], label 1
    hidden = SentenceClassificationLoss(tiny_model, num_labels=2, head_layer=_identity_head())
    with torch.no_grad():
        hidden.classifier.weight.copy_(torch.eye(2))
        hidden.classifier.bias.zero_()
    value = hidden.compute_loss_from_embeddings([_padded([-1.0, 3.0])], torch.tensor([1]))
    assert value.item() == pytest.approx(math.log(1 + math.exp(-3)), abs=1e-6)
    assert hidden.get_config_dict() == {"num_labels": 2, "hidden_dimension": 2, "dropout": 0.0}
    assert "Contrastive Learning for Generalizable" in hidden.citation
    with pytest.raises(ValueError, match="num_labels=1 must be at least 2"):
        SentenceClassificationLoss(tiny_model, num_labels=1)
    with pytest.raises(ValueError, match="expects 2 labels"):
        loss.compute_loss_from_embeddings([torch.zeros(2, 32)], torch.tensor([0]))


def test_pair_classification_bilinear_hand_computed(tiny_model):
    loss = PairClassificationLoss(tiny_model, num_labels=3, pair_head="bilinear", hidden_dimension=None)
    with torch.no_grad():
        loss.classifier.weight.zero_()
        loss.classifier.weight[0, 0, 0] = 1.0  # z_0 = u_0 * v_0, z_1 = z_2 = 0
        loss.classifier.bias.zero_()
    value = loss.compute_loss_from_embeddings([_padded([1.0]), _padded([2.0])], torch.tensor([0]))
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


def test_sts_regression_hand_computed_and_plain_cosine_equivalence(tiny_model):
    plain = STSRegressionLoss(tiny_model, hidden_dimension=None)
    assert isinstance(plain, CosineSimilarityLoss)
    # cos([1,0],[1,1]) = 0.7071 vs 1.0; cos([1,0],[0,1]) = 0 vs 0.5
    value = plain.compute_loss_from_embeddings([_padded([1.0, 0.0], [1.0, 0.0]), _padded([1.0, 1.0], [0.0, 1.0])], torch.tensor([1.0, 0.5]))
    expected = ((1 - 1 / math.sqrt(2)) ** 2 + 0.25) / 2  # 0.16789322
    assert value.item() == pytest.approx(expected, abs=1e-6)
    # through the layer: ReLU([1, -1]) = [1, 0], ReLU([1, 1]) = [1, 1] -> cos 0.7071 vs 1.0
    transformed = STSRegressionLoss(tiny_model, head_layer=_identity_head())
    value = transformed.compute_loss_from_embeddings([_padded([1.0, -1.0]), _padded([1.0, 1.0])], torch.tensor([1.0]))
    assert value.item() == pytest.approx((1 - 1 / math.sqrt(2)) ** 2, abs=1e-6)
    assert transformed.get_config_dict()["hidden_dimension"] == 2


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


@pytest.mark.parametrize("kind", ["sentence", "pair", "sts"])
def test_contract_on_the_model_scalar_grad_and_head_not_in_model(tiny_model, kind):
    tiny_model.train()
    a = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field"]
    b = ["a man plays music", "a woman cuts an onion", "a cat sleeps"]
    if kind == "sentence":
        loss, features, labels = SentenceClassificationLoss(tiny_model, 2, 16), [tiny_model.preprocess(a)], torch.tensor([0, 1, 1])
    elif kind == "pair":
        loss, features, labels = PairClassificationLoss(tiny_model, 3, hidden_dimension=16), [tiny_model.preprocess(a), tiny_model.preprocess(b)], torch.tensor([0, 1, 2])
    else:
        loss, features, labels = STSRegressionLoss(tiny_model, 16), [tiny_model.preprocess(a), tiny_model.preprocess(b)], torch.tensor([0.9, 0.8, 0.1])
    value = loss(features, labels)
    assert value.ndim == 0 and torch.isfinite(value) and value.requires_grad and value > 0
    value.backward()
    assert loss.head_layer.linear.weight.grad is not None
    head = {id(parameter) for parameter in loss.head_layer.parameters()}
    assert not head & {id(parameter) for parameter in tiny_model.parameters()}
    assert not any("head_layer" in key or "classifier" in key for key in tiny_model.state_dict())
