"""SentenceClassificationLoss: hand-computed values, checks and the task-loss contract."""

from __future__ import annotations

import math

import pytest
import torch

from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss


def test_sentence_classification_hand_computed(tiny_model, padded, identity_head):
    loss = SentenceClassificationLoss(tiny_model, num_labels=2, hidden_dimension=None)
    with torch.no_grad():
        loss.classifier.weight.zero_()
        loss.classifier.weight[0, 0] = loss.classifier.weight[1, 1] = 1.0
        loss.classifier.bias.zero_()
    # logits [2, 0] with label 0 and [0, 1] with label 0
    value = loss.compute_loss_from_embeddings([padded([2.0, 0.0], [0.0, 1.0])], torch.tensor([0, 0]))
    expected = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(1))) / 2  # 0.72009485
    assert value.item() == pytest.approx(expected, abs=1e-6) == pytest.approx(0.72009485, abs=1e-6)
    # with a hidden layer: ReLU([-1, 3]) = [0, 3] -> logits [0, 3], label 1
    hidden = SentenceClassificationLoss(tiny_model, num_labels=2, head_layer=identity_head)
    with torch.no_grad():
        hidden.classifier.weight.copy_(torch.eye(2))
        hidden.classifier.bias.zero_()
    value = hidden.compute_loss_from_embeddings([padded([-1.0, 3.0])], torch.tensor([1]))
    assert value.item() == pytest.approx(math.log(1 + math.exp(-3)), abs=1e-6)
    assert hidden.get_config_dict() == {"num_labels": 2, "hidden_dimension": 2, "dropout": 0.0}
    assert "Contrastive Learning for Generalizable" in hidden.citation
    with pytest.raises(ValueError, match="num_labels=1 must be at least 2"):
        SentenceClassificationLoss(tiny_model, num_labels=1)
    with pytest.raises(ValueError, match="expects 2 labels"):
        loss.compute_loss_from_embeddings([torch.zeros(2, 32)], torch.tensor([0]))


def test_contract_on_the_model(tiny_model, check_task_loss_contract):
    check_task_loss_contract(SentenceClassificationLoss(tiny_model, 2, 16), columns=1, labels=torch.tensor([0, 1, 1]))
