from __future__ import annotations

import pytest
import torch

from sbert_nonling.evaluation.robustness import (
    format_robustness_table,
    perturb_task,
    representation_shift,
    robustness_report,
)
from sbert_nonling.evaluation.sts import evaluate_sts
from sbert_nonling.evaluation.sts_data import load_sts_dir


@pytest.fixture
def stsb_dev(small_sts_dir):
    return load_sts_dir(small_sts_dir, "dev", tasks=("STSBenchmark",))[0]


def test_perturbed_task_keeps_scores_and_changes_sentences(stsb_dev):
    swapped = perturb_task(stsb_dev, "swap", rate=0.5, seed=3)
    assert swapped.scores == stsb_dev.scores and len(swapped) == len(stsb_dev)
    assert sum(a != b for a, b in zip(swapped.sentences1, stsb_dev.sentences1)) > len(stsb_dev) // 2
    assert perturb_task(stsb_dev, "swap", rate=0.5, seed=3).sentences1 == swapped.sentences1  # seeded
    unchanged = perturb_task(stsb_dev, "insert", rate=0.0)
    assert unchanged.sentences1 == stsb_dev.sentences1 and unchanged.sentences2 == stsb_dev.sentences2


def test_representation_shift_is_the_mean_cosine_distance(tiny_model):
    tiny_model.eval()
    sentences = ["A man is playing a guitar.", "Two dogs run in the park."]
    perturbed = ["A man is plyaing a guitar.", "park the in run dogs Two."]
    embeddings = tiny_model.encode(sentences + perturbed, convert_to_tensor=True)
    expected = 1 - torch.nn.functional.cosine_similarity(embeddings[:2], embeddings[2:]).mean().item()
    assert representation_shift(tiny_model, sentences, perturbed) == pytest.approx(expected, abs=1e-6)
    assert representation_shift(tiny_model, sentences, sentences) == pytest.approx(0.0, abs=1e-6)


def test_report_rows_are_consistent_with_the_sts_evaluator(tiny_model, stsb_dev):
    report = robustness_report({"token": tiny_model}, stsb_dev, perturbations=["swap", "shuffle"], rate=0.3)
    entry = report["token"]
    assert entry["clean"] == pytest.approx(evaluate_sts(tiny_model, [stsb_dev])["STSBenchmark"])
    for name in ("swap", "shuffle"):
        perturbed_score = evaluate_sts(tiny_model, [perturb_task(stsb_dev, name, rate=0.3)])["STSBenchmark"]
        assert entry[name]["score"] == pytest.approx(perturbed_score)
        assert entry[name]["change"] == pytest.approx(perturbed_score - entry["clean"])
        assert entry[name]["shift"] > 0.0
    table = format_robustness_table(report)
    assert "swap" in table and f"{entry['swap']['change']:+.2f}" in table
    with pytest.raises(ValueError, match="Unknown perturbation"):
        robustness_report({"token": tiny_model}, stsb_dev, perturbations=["blur"])
