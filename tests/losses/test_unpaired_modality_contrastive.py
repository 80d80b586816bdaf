from __future__ import annotations

import math

import pytest
import torch

from sbert_nonling import UnpairedModalityContrastiveLoss

# A 4 x 2 toy batch: 4 inputs, 2-D embeddings, two views each.
VIEW_1 = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.2]])
VIEW_2 = torch.tensor([[0.8, 0.6], [0.0, 1.0], [-0.6, 0.8], [-0.8, -0.6]])
LABELS = torch.tensor([3, 7, 3, 7])


def unit(vector):
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def hand_supcon(view_1, view_2, labels, temperature):
    """Khosla et al. Eq. 2 written out with Python floats."""
    z = [unit(v) for v in view_1.tolist()] + [unit(v) for v in view_2.tolist()]
    y = labels.tolist() * 2
    total = 0.0
    for i in range(len(z)):
        denominator = sum(math.exp(dot(z[i], z[a]) / temperature) for a in range(len(z)) if a != i)
        positives = [p for p in range(len(z)) if p != i and y[p] == y[i]]
        total += -sum(math.log(math.exp(dot(z[i], z[p]) / temperature) / denominator) for p in positives) / len(
            positives
        )
    return total / len(z)


def hand_label_rank(view_1, view_2, labels, temperature):
    z1, z2 = [unit(v) for v in view_1.tolist()], [unit(v) for v in view_2.tolist()]
    distinct = sorted(set(labels.tolist()))
    total = 0.0
    for i, label in enumerate(labels.tolist()):
        logits = [dot(z1[i], z2[j]) / temperature for j in range(len(z2))]
        target = distinct.index(label)
        total += -(logits[target] - math.log(sum(math.exp(value) for value in logits)))
    return total / len(z1)


@pytest.fixture
def make_loss(tiny_model):
    return lambda mode, temperature=0.5: UnpairedModalityContrastiveLoss(
        tiny_model, mode=mode, temperature=temperature, training_head="none"
    )


def test_supcon_matches_the_hand_computed_value(make_loss):
    value = make_loss("supcon").compute_loss_from_embeddings([VIEW_1, VIEW_2], LABELS)
    assert value.item() == pytest.approx(hand_supcon(VIEW_1, VIEW_2, LABELS, 0.5), rel=1e-5)


def test_simclr_is_supcon_with_one_class_per_input(make_loss):
    value = make_loss("simclr").compute_loss_from_embeddings([VIEW_1, VIEW_2], None)
    assert value.item() == pytest.approx(hand_supcon(VIEW_1, VIEW_2, torch.arange(4), 0.5), rel=1e-5)
    assert value.item() != pytest.approx(hand_supcon(VIEW_1, VIEW_2, LABELS, 0.5), rel=1e-3)


def test_released_label_rank_reproduces_the_released_target(make_loss):
    value = make_loss("released_label_rank").compute_loss_from_embeddings([VIEW_1, VIEW_2], LABELS)
    assert value.item() == pytest.approx(hand_label_rank(VIEW_1, VIEW_2, LABELS, 0.5), rel=1e-5)
    # Labels 3 and 7 -> targets 0 and 1: rows 2 and 3 are pointed at other images, not at their own second view.


def test_matched_views_score_lower_than_shuffled(make_loss):
    torch.manual_seed(0)
    view_1 = torch.randn(8, 16)
    view_2 = view_1 + 0.05 * torch.randn(8, 16)
    loss = make_loss("simclr", 0.07)
    assert loss.compute_loss_from_embeddings([view_1, view_2], None) < loss.compute_loss_from_embeddings(
        [view_1, view_2.roll(1, 0)], None
    )


def test_bad_settings_and_inputs(tiny_model, make_loss):
    with pytest.raises(ValueError, match="mode='simcse' must be one of"):
        UnpairedModalityContrastiveLoss(tiny_model, mode="simcse")
    with pytest.raises(ValueError, match="temperature=-1 must be positive"):
        UnpairedModalityContrastiveLoss(tiny_model, temperature=-1)
    with pytest.raises(ValueError, match="needs a label column"):
        make_loss("supcon").compute_loss_from_embeddings([VIEW_1, VIEW_2], None)
    with pytest.raises(ValueError, match="Got 3 labels for a batch of 4"):
        make_loss("supcon").compute_loss_from_embeddings([VIEW_1, VIEW_2], LABELS[:3])


def test_config_and_citation(make_loss):
    loss = make_loss("released_label_rank", 0.07)
    assert loss.get_config_dict() == {
        "mode": "released_label_rank",
        "temperature": 0.07,
        "training_head": "none",
        "gather_across_devices": False,
    }
    assert "Vosoughi" in loss.citation and "khosla2020supcon" in loss.citation
