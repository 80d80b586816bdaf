from __future__ import annotations

import math

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from sbert_nonling import SymmetricInfoNCE
from sbert_nonling.util.similarity import cosine_similarity

A = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
B = torch.tensor([[0.9, 0.1], [0.5, 0.9], [-0.2, 1.0]])


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def hand_symmetric(a, b, temperature):
    a, b = a.tolist(), b.tolist()
    n, total = len(a), 0.0
    for i in range(n):
        row = [cosine(a[i], b[j]) / temperature for j in range(n)]
        column = [cosine(a[j], b[i]) / temperature for j in range(n)]
        total += -(row[i] - math.log(sum(math.exp(v) for v in row))) - (
            column[i] - math.log(sum(math.exp(v) for v in column))
        )
    return total / (2 * n)


def test_equals_the_mean_of_row_and_column_cross_entropies(tiny_model):
    loss = SymmetricInfoNCE(tiny_model, temperature=0.5)
    assert loss.compute_loss_from_embeddings([A, B], None).item() == pytest.approx(hand_symmetric(A, B, 0.5), rel=1e-5)
    swapped = loss.compute_loss_from_embeddings([B, A], None).item()
    assert swapped == pytest.approx(hand_symmetric(A, B, 0.5), rel=1e-5)  # symmetric in its two columns


def test_it_scores_as_multiple_negatives_ranking_loss_with_sentence_transformers_cos_sim(tiny_model):
    """cosine_similarity stands in for ``cos_sim`` (no ``Tensor.to_dense()`` in a compiled graph): the same loss."""
    loss = SymmetricInfoNCE(tiny_model, temperature=0.5)
    assert loss.similarity_fct is cosine_similarity
    plain = MultipleNegativesRankingLoss(  # similarity_fct: cos_sim
        tiny_model, scale=2.0, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
    )
    torch.testing.assert_close(
        loss.compute_loss_from_embeddings([A, B], None), plain.compute_loss_from_embeddings([A, B], None)
    )


def test_hard_negatives_join_the_row_denominators(tiny_model):
    loss = SymmetricInfoNCE(tiny_model, temperature=0.5)
    negatives = torch.tensor([[1.0, 0.05], [0.6, 0.7], [0.1, 1.0]])
    assert loss.compute_loss_from_embeddings([A, B, negatives], None) > loss.compute_loss_from_embeddings([A, B], None)


def test_learnable_temperature_is_a_clamped_log_scale_parameter(tiny_model):
    loss = SymmetricInfoNCE(tiny_model, temperature=0.05, learnable_temperature=True, max_scale=100.0)
    assert isinstance(loss.logit_scale, torch.nn.Parameter) and loss.logit_scale.exp().item() == pytest.approx(20.0)
    value = loss.compute_loss_from_embeddings([A, B], None)
    value.backward()
    assert loss.logit_scale.grad is not None and loss.logit_scale.grad.abs() > 0
    assert "logit_scale" in loss.state_dict()
    capped = SymmetricInfoNCE(tiny_model, temperature=0.5, learnable_temperature=True, max_scale=5.0)
    with torch.no_grad():
        capped.logit_scale.fill_(math.log(1000.0))
    assert capped.get_config_dict()["temperature"] == pytest.approx(0.2)  # clamped, as CLIP caps its logit scale
    assert capped.compute_loss_from_embeddings([A, B], None).item() == pytest.approx(
        hand_symmetric(A, B, 0.2), rel=1e-4
    )
    assert capped.scale.item() == pytest.approx(5.0)  # the scale MultipleNegativesRankingLoss multiplied by


def test_settings_and_config(tiny_model):
    with pytest.raises(ValueError, match="temperature=0 must be positive"):
        SymmetricInfoNCE(tiny_model, temperature=0)
    with pytest.raises(ValueError, match="exceeds max_scale=50"):
        SymmetricInfoNCE(tiny_model, temperature=0.01, learnable_temperature=True, max_scale=50)
    fixed = SymmetricInfoNCE(tiny_model, temperature=0.05)
    assert fixed.logit_scale is None and fixed.scale == pytest.approx(20.0)
    assert fixed.get_config_dict() == {
        "temperature": pytest.approx(0.05),
        "learnable_temperature": False,
        "max_scale": 100.0,
        "gather_across_devices": False,
        "token_head": "none",
    }
    assert "radford2021clip" in fixed.citation
    with pytest.raises(ValueError, match="token_head='bogus' must be one of"):
        SymmetricInfoNCE(tiny_model, token_head="bogus")


def test_token_head_pools_the_head_output_over_unmasked_tokens(tiny_model):
    loss = SymmetricInfoNCE(tiny_model, temperature=0.5, token_head="linear_gelu_layernorm")
    linear, gelu, norm = loss.head
    assert isinstance(gelu, torch.nn.GELU) and isinstance(norm, torch.nn.LayerNorm)
    anchors = ["A man is playing a guitar.", "Two dogs run."]
    positives = ["A man plays the guitar on a long stage tonight.", "Dogs are running."]
    features = [tiny_model.preprocess(anchors), tiny_model.preprocess(positives)]
    tiny_model.eval()
    with torch.no_grad():
        pooled = []
        for column in features:
            output = tiny_model(dict(column))
            head = norm(torch.nn.functional.gelu(output["token_embeddings"] @ linear.weight.T + linear.bias))
            mask = output["attention_mask"].tolist()
            pooled.append(
                torch.stack(
                    [
                        sum(head[i, t] for t in range(len(mask[i])) if mask[i][t]) / sum(mask[i])
                        for i in range(len(mask))
                    ]
                )
            )
        value = loss([dict(column) for column in features], None)
    assert value.item() == pytest.approx(hand_symmetric(pooled[0], pooled[1], 0.5), rel=1e-5)
    assert set(name for name, _ in loss.named_parameters()) >= {"head.0.weight", "head.2.weight"}
    assert "head.0.weight" not in {name for name, _ in tiny_model.named_parameters()}  # training-only


def test_trains_text_pairs_in_the_trainer(tiny_model, wiki_sentences, tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainingArguments

    from sbert_nonling.training import NonLinguisticTrainer

    loss = SymmetricInfoNCE(tiny_model, learnable_temperature=True)
    data = Dataset.from_dict({"anchor": wiki_sentences[:32], "positive": wiki_sentences[32:64]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=8,
        learning_rate=0.1,
        save_strategy="no",
        report_to="none",
    )
    start = loss.logit_scale.item()
    NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=data, loss=loss).train()
    assert loss.logit_scale.item() != start  # the loss-owned temperature is optimised
