"""Alignment / uniformity (Wang & Isola) and anisotropy against hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from sbert_nonling.evaluation.geometry import alignment_uniformity, anisotropy
from sbert_nonling.evaluation.sts_data import STSData


def test_alignment_uniformity_and_anisotropy_match_their_definitions(tiny_model):
    tiny_model.eval()
    task = STSData(
        "toy",
        ["a man plays", "dogs run", "it rains"],
        ["a man is playing", "cats sleep", "rain falls"],
        [4.5, 1.0, 4.0],
    )
    result = alignment_uniformity(tiny_model, task)

    def unit(texts):
        return torch.nn.functional.normalize(tiny_model.encode(texts, convert_to_tensor=True).float(), dim=-1)

    first, second = unit(["a man plays", "it rains"]), unit(["a man is playing", "rain falls"])
    assert result["alignment"] == pytest.approx(((first - second) ** 2).sum(-1).mean().item(), rel=1e-5)
    distinct = unit(sorted(set(task.sentences1) | set(task.sentences2)))
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    expected = math.log(
        sum(math.exp(-2 * ((distinct[i] - distinct[j]) ** 2).sum().item()) for i, j in pairs) / len(pairs)
    )
    assert result["uniformity"] == pytest.approx(expected, rel=1e-3)  # float32 pdist vs float64 sums of tiny distances
    sentences = ["one", "two words", "three words here"]
    embeddings = unit(sentences)
    cosines = [(embeddings[i] @ embeddings[j]).item() for i in range(3) for j in range(3) if i != j]
    assert anisotropy(tiny_model, sentences) == pytest.approx(sum(cosines) / 6, rel=1e-5)
    with pytest.raises(ValueError, match="no pair has a score >= 5"):
        alignment_uniformity(tiny_model, task, positive_threshold=5.0)
