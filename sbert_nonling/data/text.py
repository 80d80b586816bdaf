"""Text training data: one-sentence-per-line corpora (unsupervised) and NLI triplet CSVs (supervised)."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from datasets import Dataset

from sbert_nonling.util.validation import check_sentence, split_lines

logger = logging.getLogger(__name__)

NLI_COLUMNS = ("sent0", "sent1", "hard_neg")


def _open_utf8(path: Path) -> str:
    if not path.is_file():
        raise ValueError(f"Data file {str(path)!r} does not exist.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not valid UTF-8 (byte {error.start}).") from None


def read_sentences(path: str | Path, limit: int | None = None) -> list[str]:
    """Sentences of a one-sentence-per-line UTF-8 file (SimCSE's wiki1m format); blank lines are skipped."""
    path = Path(path)
    lines = split_lines(_open_utf8(path))
    sentences = [line.strip() for line in lines if line.strip()]
    if len(sentences) < len(lines):
        logger.info(f"{path}: skipped {len(lines) - len(sentences)} blank line(s)")
    if not sentences:
        raise ValueError(f"{path} holds no sentences.")
    return sentences[:limit]


def read_nli_triplets(path: str | Path, limit: int | None = None) -> list[tuple[str, str, str]]:
    """(premise, entailment, contradiction) rows of a CSV in SimCSE's nli_for_simcse format.

    The header ``sent0,sent1,hard_neg`` is required; every row must have three non-empty fields.
    """
    path = Path(path)
    rows = list(csv.reader(split_lines(_open_utf8(path))))
    if not rows or tuple(column.strip() for column in rows[0]) != NLI_COLUMNS:
        found = rows[0] if rows else "an empty file"
        raise ValueError(f"{path}: expected the header {','.join(NLI_COLUMNS)}, found {found!r}.")
    triplets = []
    for line_number, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise ValueError(f"{path}:{line_number}: expected 3 columns ({','.join(NLI_COLUMNS)}), found {len(row)}.")
        triplets.append(tuple(check_sentence(field, f"{path}:{line_number} {name}") for field, name in zip(row, NLI_COLUMNS)))
    if not triplets:
        raise ValueError(f"{path} holds no triplets.")
    return triplets[:limit]


def sentence_pairs_dataset(sentences: list[str]) -> Dataset:
    """Unsupervised SimCSE data: each sentence paired with itself (columns ``anchor``, ``positive``)."""
    return Dataset.from_dict({"anchor": sentences, "positive": sentences})


def nli_triplets_dataset(triplets: list[tuple[str, str, str]]) -> Dataset:
    """Supervised SimCSE data: columns ``anchor``, ``positive`` (entailment), ``negative`` (contradiction)."""
    anchors, positives, negatives = zip(*triplets)
    return Dataset.from_dict({"anchor": list(anchors), "positive": list(positives), "negative": list(negatives)})
