"""Embedding-space geometry: alignment and uniformity (Wang & Isola, 2020) and anisotropy."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from sentence_transformers import SentenceTransformer

from sbert_nonling.evaluation.sts_data import STSData


def _unit(model: SentenceTransformer, sentences: Sequence[str], batch_size: int) -> torch.Tensor:
    embeddings = model.encode(list(sentences), batch_size=batch_size, convert_to_tensor=True).float()
    return torch.nn.functional.normalize(embeddings, dim=-1)


def alignment_uniformity(
    model: SentenceTransformer, task: STSData, positive_threshold: float = 4.0, batch_size: int = 64
) -> dict[str, float]:
    r"""Alignment and uniformity of L2-normalised embeddings, as MCSE's Figure 2 measures them on STS-B:

    .. math::

        \ell_{align} = \mathbb{E}_{(x, y) \sim p_{pos}} \lVert f(x) - f(y) \rVert^2, \qquad
        \ell_{uniform} = \log \mathbb{E}_{x, y \sim p_{data}} e^{-2 \lVert f(x) - f(y) \rVert^2}

    over the pairs scored at least ``positive_threshold`` (p_pos) and every distinct sentence (p_data); lower is
    better.

    Args:
        model: the model to measure.
        task: an STS task (e.g. STS-B dev) whose pairs and sentences are embedded.
        positive_threshold: the gold score from which a pair counts as positive (STS-B scale 0-5).
        batch_size: sentences per ``encode`` batch.
    """
    positives = [index for index, score in enumerate(task.scores) if score >= positive_threshold]
    if not positives:
        raise ValueError(f"{task.name}: no pair has a score >= {positive_threshold}; lower positive_threshold.")
    first, second = (
        _unit(model, [sentences[index] for index in positives], batch_size)
        for sentences in (task.sentences1, task.sentences2)
    )
    alignment = (first - second).pow(2).sum(dim=-1).mean()
    distinct = _unit(model, sorted(set(task.sentences1) | set(task.sentences2)), batch_size)
    uniformity = torch.pdist(distinct).pow(2).mul(-2).exp().mean().log()
    return {"alignment": float(alignment), "uniformity": float(uniformity)}


def anisotropy(model: SentenceTransformer, sentences: Sequence[str], batch_size: int = 64) -> float:
    """Mean cosine similarity between the embeddings of distinct sentences (0: isotropic; PIXEL's [CLS]: 0.999).

    Args:
        model: the model to measure.
        sentences: the sentences (duplicates are dropped).
        batch_size: sentences per ``encode`` batch.
    """
    unit = _unit(model, sentences, batch_size)
    if unit.shape[0] < 2:
        raise ValueError("anisotropy needs at least two sentences.")
    similarity = unit @ unit.T
    count = unit.shape[0]
    return float((similarity.sum() - similarity.diagonal().sum()) / (count * (count - 1)))
