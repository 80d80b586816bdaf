from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from sbert_nonling import SimCSELoss
from sbert_nonling.util.similarity import cosine_similarity


def reference_simcse(anchors, candidates, temperature):
    """SimCSE Eq. 1 / 5 written out: -log softmax of cosine / tau over all candidates, target = own positive."""
    losses = []
    for i, anchor in enumerate(anchors):
        logits = torch.stack([F.cosine_similarity(anchor, candidate, dim=0) / temperature for candidate in candidates])
        losses.append(-torch.log_softmax(logits, dim=0)[i])
    return torch.stack(losses).mean()


def test_loss_equals_the_formula_on_a_toy_batch(tiny_model):
    torch.manual_seed(0)
    anchors, positives, negatives = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    loss = SimCSELoss(tiny_model, temperature=0.05, training_head="none")
    unsupervised = loss.compute_loss_from_embeddings([anchors, positives], None)
    torch.testing.assert_close(unsupervised, reference_simcse(anchors, positives, 0.05))
    supervised = loss.compute_loss_from_embeddings([anchors, positives, negatives], None)
    torch.testing.assert_close(supervised, reference_simcse(anchors, torch.cat([positives, negatives]), 0.05))


def test_it_scores_as_multiple_negatives_ranking_loss_with_sentence_transformers_cos_sim(tiny_model):
    """cosine_similarity stands in for ``cos_sim`` (no ``Tensor.to_dense()`` in a compiled graph): the same loss."""
    torch.manual_seed(2)
    embeddings = [torch.randn(4, 8) for _ in range(3)]  # anchors, positives, hard negatives
    loss = SimCSELoss(tiny_model, temperature=0.05, training_head="none")
    assert loss.similarity_fct is cosine_similarity
    plain = MultipleNegativesRankingLoss(tiny_model, scale=20.0)  # similarity_fct: cos_sim
    torch.testing.assert_close(
        loss.compute_loss_from_embeddings(embeddings), plain.compute_loss_from_embeddings(embeddings, None)
    )


def test_matched_pairs_score_lower_than_shuffled(tiny_model):
    torch.manual_seed(1)
    anchors = torch.randn(6, 4)
    positives = anchors + 0.01 * torch.randn(6, 4)
    loss = SimCSELoss(tiny_model, training_head="none")
    matched = loss.compute_loss_from_embeddings([anchors, positives], None)
    shuffled = loss.compute_loss_from_embeddings([anchors, positives.roll(1, dims=0)], None)
    assert matched < shuffled


def test_dropout_views_differ_and_the_training_head_is_not_in_the_model(tiny_model):
    loss = SimCSELoss(tiny_model, training_head="mlp")
    tiny_model.train()
    sentences = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field"]
    features = [tiny_model.preprocess(sentences), tiny_model.preprocess(sentences)]
    value = loss(features, None)
    assert value.ndim == 0 and torch.isfinite(value) and value.requires_grad and value > 0
    value.backward()
    assert loss.head[0].weight.grad is not None and loss.head[0].weight.grad.abs().sum() > 0
    head_parameters = {id(parameter) for parameter in loss.head.parameters()}
    assert not head_parameters & {id(parameter) for parameter in tiny_model.parameters()}
    with torch.no_grad():
        view_a = tiny_model(tiny_model.preprocess(sentences))["sentence_embedding"]
        view_b = tiny_model(tiny_model.preprocess(sentences))["sentence_embedding"]
    assert not torch.allclose(view_a, view_b)  # dropout is the augmentation


def test_invalid_settings_are_rejected(tiny_model):
    with pytest.raises(ValueError, match="temperature=0 must be positive"):
        SimCSELoss(tiny_model, temperature=0)
    with pytest.raises(ValueError, match="training_head='bogus' must be one of"):
        SimCSELoss(tiny_model, training_head="bogus")


def test_config_and_citation(tiny_model):
    loss = SimCSELoss(tiny_model, temperature=0.1, training_head="none")
    assert loss.get_config_dict() == {
        "temperature": 0.1,
        "training_head": "none",
        "margin": 0.0,
        "gather_across_devices": False,
    }
    assert loss.scale == pytest.approx(10.0)
    assert "gao2021simcse" in loss.citation


def test_compute_loss_from_outputs_matches_the_loss_on_the_same_outputs(tiny_model):
    tiny_model.eval()  # no dropout: the two columns' outputs are reproducible
    loss = SimCSELoss(tiny_model, training_head="mlp")
    sentences = ["a man plays a guitar", "a woman slices an onion", "two dogs run"]
    outputs = [tiny_model(tiny_model.preprocess(sentences)) for _ in range(2)]
    torch.testing.assert_close(
        loss.compute_loss_from_outputs(outputs), loss([tiny_model.preprocess(sentences)] * 2, None)
    )


def test_an_angular_margin_moves_every_negative_but_the_positives_hard_negatives_included(tiny_model):
    anchors, positives, negatives = (
        torch.randn(3, 8, generator=torch.Generator().manual_seed(seed)) for seed in range(3)
    )
    loss = SimCSELoss(tiny_model, temperature=0.05, training_head="none", margin=0.2)
    cosines = F.normalize(anchors, dim=-1) @ F.normalize(torch.cat([positives, negatives]), dim=-1).T  # (3, 6)
    angles = torch.acos(cosines)
    positive = torch.eye(3, 6, dtype=torch.bool)
    logits = torch.where(positive | (angles <= 0.2), cosines, torch.cos(angles - 0.2)) / 0.05
    expected = F.cross_entropy(logits, torch.arange(3))
    assert loss.compute_loss_from_embeddings([anchors, positives, negatives]).item() == pytest.approx(expected.item())
    plain = SimCSELoss(tiny_model, temperature=0.05, training_head="none")
    assert loss.compute_loss_from_embeddings([anchors, positives]) > plain.compute_loss_from_embeddings(
        [anchors, positives]
    )


def test_a_margin_is_refused_with_negatives_from_other_processes(tiny_model):
    with pytest.raises(ValueError, match="this process's batch"):
        SimCSELoss(tiny_model, margin=0.15, gather_across_devices=True)
