from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from sbert_nonling import MultimodalAlignLoss, SimCSELoss
from sbert_nonling.util.similarity import cosine_similarity

VIEWS = [torch.tensor([[1.0, 0.0, 0.5], [0.2, 1.0, 0.0]]), torch.tensor([[0.9, 0.1, 0.4], [0.0, 1.0, 0.3]])]
IMAGES = torch.tensor([[1.0, 0.2, 0.0], [0.1, 0.8, 0.6]])


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def cross_entropy(logits, target):
    return -(logits[target] - math.log(sum(math.exp(value) for value in logits)))


def identity_loss(tiny_model, **kwargs):
    """Heads set to the identity, so the loss works directly on the 3-wide toy embeddings."""
    loss = MultimodalAlignLoss(
        tiny_model, image_dimension=3, projection_dimension=3, projection_head="linear", **kwargs
    )
    loss.text_head[0] = torch.nn.Linear(3, 3)  # the tiny model is 32 wide; the toy views are 3 wide
    with torch.no_grad():
        for head in (loss.text_head[0], loss.image_head[0]):
            head.weight.copy_(torch.eye(3))
            head.bias.zero_()
    return loss


@pytest.mark.parametrize(("direction", "temperature"), [("text_to_image", 0.05), ("symmetric", 0.1)])
def test_grounding_matches_the_hand_computed_value(tiny_model, direction, temperature):
    loss = identity_loss(tiny_model, weight=0.5, direction=direction, temperature=temperature)
    terms = loss.compute_loss_from_outputs([{"sentence_embedding": view} for view in VIEWS], IMAGES)
    symmetric = direction == "symmetric"
    ces = []
    for view in VIEWS:
        texts, imgs = view.tolist(), IMAGES.tolist()
        ces.append(
            sum(cross_entropy([cosine(texts[i], imgs[j]) / temperature for j in range(2)], i) for i in range(2)) / 2
        )
        if symmetric:
            ces.append(
                sum(cross_entropy([cosine(imgs[j], texts[i]) / temperature for i in range(2)], j) for j in range(2))
                / 2
            )
    assert set(terms) == {"grounding"}
    assert terms["grounding"].item() == pytest.approx(0.5 * sum(ces) / len(ces), rel=1e-5)


def test_simcse_term_is_the_shared_text_loss(tiny_model):
    simcse = SimCSELoss(tiny_model, training_head="none")
    loss = identity_loss(tiny_model, text_loss=simcse)
    terms = loss.compute_loss_from_outputs([{"sentence_embedding": view} for view in VIEWS], IMAGES)
    torch.testing.assert_close(terms["simcse"], simcse.compute_loss_from_embeddings(VIEWS, None))


def test_local_term_runs_on_region_features_in_a_real_forward(tiny_model):
    tiny_model.train()
    loss = MultimodalAlignLoss(tiny_model, image_dimension=6, local_weight=1.0, direction="symmetric")
    features = [tiny_model.preprocess(["a dog runs on grass", "two men cook"]) for _ in range(2)]
    terms = loss(features, torch.randn(2, 4, 6))
    assert set(terms) == {"grounding", "local"} and all(torch.isfinite(value) for value in terms.values())
    sum(terms.values()).backward()
    assert loss.local_loss.word_head.weight.grad is not None and loss.local_loss.region_head.weight.grad is not None


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (None, r"needs image features \(B, d\)"),
        (torch.randn(3, 8), "features for 3 images but 2 captions"),
        (torch.randn(2, 5), "dimension 5, but MultimodalAlignLoss was built with image_dimension=8"),
    ],
)
def test_bad_pairs_are_rejected(tiny_model, labels, message):
    loss = MultimodalAlignLoss(tiny_model, image_dimension=8)
    with pytest.raises(ValueError, match=message):
        loss([tiny_model.preprocess(["a", "b"])] * 2, labels)


def test_settings_are_checked_and_configured(tiny_model):
    with pytest.raises(ValueError, match="direction='both' must be one of"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, direction="both")
    with pytest.raises(ValueError, match=r"needs image features \(B, regions, d\) as the label column, got \(2, 8\)"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, local_weight=1.0)(
            [tiny_model.preprocess(["a", "b"])] * 2, torch.randn(2, 8)
        )
    config = MultimodalAlignLoss(tiny_model, image_dimension=8).get_config_dict()
    assert config["weight"] == 0.01 and config["temperature"] == 0.05 and config["projection_dimension"] == 256
    assert config["direction"] == "text_to_image" and config["gammas"] is None
    assert "zhang2022mcse" in MultimodalAlignLoss(tiny_model, image_dimension=8).citation


def test_projection_heads_take_the_training_head_kinds(tiny_model):
    mcse, macd = (
        MultimodalAlignLoss(tiny_model, image_dimension=8, projection_head=kind) for kind in ("mlp", "linear")
    )
    assert [type(module) for module in mcse.text_head] == [torch.nn.Linear, torch.nn.Tanh]
    assert [type(module) for module in macd.image_head] == [torch.nn.Linear]
    assert mcse.get_config_dict()["projection_head"] == "mlp" and macd.get_config_dict()["image_dimension"] == 8
    with pytest.raises(ValueError, match="projection_head='tanh' must be one of"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, projection_head="tanh")


def test_projections_are_the_heads_and_regions_are_averaged_first(tiny_model):
    loss = MultimodalAlignLoss(tiny_model, image_dimension=4, projection_dimension=5)
    sentences, regions = torch.randn(3, tiny_model.get_embedding_dimension()), torch.randn(3, 6, 4)
    torch.testing.assert_close(loss.project_text(sentences), loss.text_head(sentences))
    torch.testing.assert_close(loss.project_images(regions), loss.image_head(regions.mean(dim=1)))
    torch.testing.assert_close(loss.project_images(regions[:, 0]), loss.image_head(regions[:, 0]))


def test_the_grounding_term_is_multiple_negatives_ranking_loss_on_the_projections(tiny_model):
    loss = MultimodalAlignLoss(tiny_model, image_dimension=8, direction="symmetric", temperature=0.1)
    ranking = loss.grounding_loss
    assert isinstance(ranking, MultipleNegativesRankingLoss) and ranking.scale == pytest.approx(10.0)
    assert (ranking.directions, ranking.partition_mode) == (("query_to_doc", "doc_to_query"), "per_direction")
    assert ranking.similarity_fct is cosine_similarity  # no Tensor.to_dense() in a compiled graph
    plain = MultipleNegativesRankingLoss(  # similarity_fct: sentence-transformers' cos_sim, the same numbers
        tiny_model, scale=10.0, directions=ranking.directions, partition_mode="per_direction"
    )
    texts, images = torch.randn(4, 256), torch.randn(4, 256)
    torch.testing.assert_close(
        loss.grounding_term(texts, images), plain.compute_loss_from_embeddings([texts, images], None)
    )


@pytest.mark.parametrize("direction", ["text_to_image", "symmetric"])
def test_gather_across_devices_adds_the_other_processes_pairs_as_negatives(tiny_model, monkeypatch, direction):
    """Rank 1 of 2, the other process holding the negated vectors: labels are offset by the rank."""
    from sentence_transformers.sentence_transformer.losses import multiple_negatives_ranking

    monkeypatch.setattr(multiple_negatives_ranking, "all_gather_with_grad", lambda x: torch.cat([-x, x]))
    monkeypatch.setattr(multiple_negatives_ranking, "get_rank", lambda: 1)
    loss = identity_loss(tiny_model, direction=direction, gather_across_devices=True)
    terms = loss.compute_loss_from_outputs([{"sentence_embedding": view} for view in VIEWS], IMAGES)
    targets, images = torch.arange(2) + 2, F.normalize(IMAGES, dim=-1)
    expected = []
    for view in VIEWS:
        texts = F.normalize(view, dim=-1)
        expected.append(F.cross_entropy(texts @ torch.cat([-images, images]).T / 0.05, targets))
        if direction == "symmetric":
            expected.append(F.cross_entropy(images @ torch.cat([-texts, texts]).T / 0.05, targets))
    torch.testing.assert_close(terms["grounding"], 0.01 * torch.stack(expected).mean())
