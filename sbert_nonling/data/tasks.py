"""Supervised task data for multi-task training: SICK entailment labels, STS-B genres, STS regression pairs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from datasets import Dataset

from sbert_nonling.util.validation import check_sentence, read_tab_rows

#: SICK's entailment judgements, in the order used as class ids.
SICK_LABELS: tuple[str, ...] = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")


def _rows(path: Path, min_columns: int, header_prefix: str | None = None) -> list[tuple[str, list[str]]]:
    rows = read_tab_rows(path, min_columns, header_prefix)
    if not rows:
        raise ValueError(f"{path} holds no rows.")
    return rows


def read_sick_entailment(path: str | Path, limit: int | None = None) -> list[tuple[str, str, str]]:
    """(sentence_A, sentence_B, entailment_judgment) rows of a SICK release file (judgements in
    :data:`SICK_LABELS`).

    Args:
        path: a SICK release file (``SICK_train.txt``, ``SICK_trial.txt``, ...).
        limit: keep at most this many rows; None keeps all.
    """
    pairs = []
    for where, fields in _rows(Path(path), min_columns=5, header_prefix="pair_ID"):
        label = fields[4].strip()
        if label not in SICK_LABELS:
            raise ValueError(f"{where}: entailment_judgment {label!r} is not one of {list(SICK_LABELS)}.")
        pairs.append(
            (check_sentence(fields[1], f"{where} sentence_A"), check_sentence(fields[2], f"{where} sentence_B"), label)
        )
    return pairs[:limit]


def read_stsb_genres(path: str | Path, limit: int | None = None) -> list[tuple[str, str]]:
    """(sentence, genre) for every distinct sentence of an STS Benchmark file (its first genre, e.g. ``main-news``).

    Args:
        path: an STS Benchmark release file (``sts-train.csv``, ...).
        limit: keep at most this many sentences; None keeps all.
    """
    seen: dict[str, str] = {}
    for where, fields in _rows(Path(path), min_columns=7):
        genre = fields[0].strip()
        if not genre:
            raise ValueError(f"{where}: the genre column is empty.")
        for column in (5, 6):
            sentence = check_sentence(fields[column], f"{where} sentence {column - 4}")
            seen.setdefault(sentence, genre)
    return list(seen.items())[:limit]


def sentence_classification_dataset(
    examples: Sequence[tuple[str, str]], label_names: Sequence[str] | None = None
) -> tuple[Dataset, tuple[str, ...]]:
    """Columns ``sentence``, ``label`` (class id) from (sentence, label name) pairs, and the label names in id
    order.

    Args:
        examples: ``(sentence, label name)`` pairs.
        label_names: the classes in id order; None takes the sorted distinct names of ``examples``.
    """
    return _classification_dataset("sentence_classification_dataset", ("sentence",), examples, label_names)


def pair_classification_dataset(
    examples: Sequence[tuple[str, str, str]], label_names: Sequence[str] | None = SICK_LABELS
) -> tuple[Dataset, tuple[str, ...]]:
    """Columns ``sentence1``, ``sentence2``, ``label`` (class id) from (sentence1, sentence2, label name), and the
    names.

    Args:
        examples: ``(sentence1, sentence2, label name)`` triplets.
        label_names: the classes in id order (default: SICK's); None takes the sorted distinct names of ``examples``.
    """
    return _classification_dataset("pair_classification_dataset", ("sentence1", "sentence2"), examples, label_names)


def _classification_dataset(
    what: str, columns: tuple[str, ...], examples: Sequence[tuple[str, ...]], label_names: Sequence[str] | None
) -> tuple[Dataset, tuple[str, ...]]:
    if not examples:
        raise ValueError(f"{what} needs at least one ({', '.join(columns)}, label) example.")
    *texts, labels = zip(*examples)
    names = tuple(label_names) if label_names is not None else tuple(sorted(set(labels)))
    index = {name: position for position, name in enumerate(names)}
    unknown = sorted(set(labels) - set(index))
    if unknown:
        raise ValueError(f"{what}: label(s) {unknown[:5]} are not in label_names={list(names)}.")
    return Dataset.from_dict(
        {**{column: list(text) for column, text in zip(columns, texts)}, "label": [index[label] for label in labels]}
    ), names


def sts_regression_dataset(
    sentences1: Sequence[str], sentences2: Sequence[str], scores: Sequence[float], score_range: tuple[float, float]
) -> Dataset:
    """Columns ``sentence1``, ``sentence2``, ``score`` with the gold scores mapped linearly from ``score_range``
    (STS-B: (0, 5); SICK relatedness: (1, 5)) to [0, 1], the range of a cosine-similarity regression target.

    Args:
        sentences1: the first sentence of every pair.
        sentences2: the second sentence of every pair.
        scores: the gold score of every pair, inside ``score_range``.
        score_range: ``(low, high)`` of the gold scale, mapped to [0, 1].
    """
    low, high = score_range
    if not high > low:
        raise ValueError(f"score_range={score_range!r} must be (low, high) with high > low, e.g. (0, 5) for STS-B.")
    if not len(sentences1) == len(sentences2) == len(scores):
        raise ValueError(
            f"sts_regression_dataset got {len(sentences1)}, {len(sentences2)} and {len(scores)} items; they must be "
            "aligned."
        )
    outside = [score for score in scores if not low <= score <= high]
    if outside:
        raise ValueError(f"{len(outside)} score(s) outside score_range={score_range!r}, e.g. {outside[0]!r}.")
    return Dataset.from_dict(
        {
            "sentence1": list(sentences1),
            "sentence2": list(sentences2),
            "score": [(score - low) / (high - low) for score in scores],
        }
    )
