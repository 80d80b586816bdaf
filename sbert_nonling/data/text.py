"""Text training data: one-sentence-per-line corpora (unsupervised) and NLI triplet CSVs (supervised)."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from datasets import Dataset

from sbert_nonling.data.hub import NLI_ROLES, SENTENCE_ROLES, hub_source, load_hub_columns
from sbert_nonling.util.validation import check_sentence, read_lines

logger = logging.getLogger(__name__)


def read_sentences(path: str | Path, limit: int | None = None) -> list[str]:
    """Non-blank sentences of a one-sentence-per-line UTF-8 file (SimCSE's wiki1m) or of a Hub dataset's ``text``.

    Args:
        path: a text file, or a Hub dataset name with an optional ``?text=COLUMN``.
        limit: keep at most this many sentences; None keeps all.
    """
    source = hub_source(path, SENTENCE_ROLES)
    if source is not None:
        lines = load_hub_columns(source, SENTENCE_ROLES)["text"]
        path = str(source)
        for row, line in enumerate(lines):
            if not isinstance(line, str):
                raise ValueError(f"{path} row {row}: the text column must hold strings, got {line!r}.")
    else:
        path = Path(path)
        lines = read_lines(path)
    sentences = [line.strip() for line in lines if line.strip()]
    if len(sentences) < len(lines):
        logger.info(f"{path}: skipped {len(lines) - len(sentences)} blank line(s)")
    if not sentences:
        raise ValueError(f"{path} holds no sentences.")
    return sentences[:limit]


def read_nli_triplets(path: str | Path, limit: int | None = None) -> list[tuple[str, str, str]]:
    """(premise, entailment, contradiction) rows of a SimCSE nli_for_simcse CSV (``sent0,sent1,hard_neg``) or Hub
    dataset.

    Args:
        path: a CSV file with header ``sent0,sent1,hard_neg``, or a Hub dataset name with those columns.
        limit: keep at most this many rows; None keeps all.
    """
    source = hub_source(path, NLI_ROLES)
    if source is not None:
        path = str(source)
        dataset = load_hub_columns(source, NLI_ROLES)
        numbered = [(f"{path} row {index}", [row[name] for name in NLI_ROLES]) for index, row in enumerate(dataset)]
    else:
        path = Path(path)
        rows = list(csv.reader(read_lines(path)))
        if not rows or tuple(column.strip() for column in rows[0]) != NLI_ROLES:
            found = rows[0] if rows else "an empty file"
            raise ValueError(f"{path}: expected the header {','.join(NLI_ROLES)}, found {found!r}.")
        numbered = [(f"{path}:{line_number}", row) for line_number, row in enumerate(rows[1:], start=2)]
    triplets = []
    for where, row in numbered:
        if len(row) != 3:
            raise ValueError(f"{where}: expected 3 columns ({','.join(NLI_ROLES)}), found {len(row)}.")
        if tuple(field.strip() for field in row) == NLI_ROLES:
            raise ValueError(
                f"{where}: the header {','.join(NLI_ROLES)} again (files joined with their headers?); remove it."
            )
        sent0, sent1, hard_neg = (check_sentence(field, f"{where} {name}") for field, name in zip(row, NLI_ROLES))
        triplets.append((sent0, sent1, hard_neg))
    if not triplets:
        raise ValueError(f"{path} holds no triplets.")
    return triplets[:limit]


def sentence_pairs_dataset(sentences: list[str]) -> Dataset:
    """Unsupervised SimCSE data: each sentence paired with itself (columns ``anchor``, ``positive``).

    Args:
        sentences: the sentences, one row each.
    """
    return Dataset.from_dict({"anchor": sentences, "positive": sentences})


def nli_triplets_dataset(triplets: list[tuple[str, str, str]]) -> Dataset:
    """Supervised SimCSE data: columns ``anchor``, ``positive`` (entailment), ``negative`` (contradiction).

    Args:
        triplets: ``(premise, entailment, contradiction)`` rows.
    """
    anchors, positives, negatives = zip(*triplets)
    return Dataset.from_dict({"anchor": list(anchors), "positive": list(positives), "negative": list(negatives)})
