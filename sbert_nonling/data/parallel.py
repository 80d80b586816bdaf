"""Parallel sentence pairs (English anchor, translation) for cross-lingual training (Pixel Linguist's leapfrogging)."""

from __future__ import annotations

import csv
from pathlib import Path

from datasets import Dataset

from sbert_nonling.util.validation import check_sentence


def _stsb_multi_sentences(path: Path) -> list[str]:
    """Both sentences of every row of an stsb_multi_mt CSV (``sentence1,sentence2,score``), row by row."""
    if not path.is_file():
        raise ValueError(f"Parallel data file {str(path)!r} does not exist.")
    sentences = []
    with open(path, encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if len(row) != 3:
                raise ValueError(f"{path}:{number}: expected 3 columns (sentence1, sentence2, score), found {len(row)}.")
            sentences += [check_sentence(row[0], f"{path}:{number} sentence1"), check_sentence(row[1], f"{path}:{number} sentence2")]
    return sentences


def stsb_multi_parallel_pairs(directory: str | Path, languages: list[str], split: str = "train") -> list[tuple[str, str]]:
    """(English, translation) sentence pairs from stsb_multi_mt files ``stsb-<lang>-<split>.csv``.

    The files of one split are row-aligned translations of the English file; both sentences of every row become a
    pair. Use the ``train`` split for training so the dev sets used for selection stay unseen.

    Raises:
        ValueError: a language file is missing or its rows do not align with the English file.
    """
    directory = Path(directory)
    english = _stsb_multi_sentences(directory / f"stsb-en-{split}.csv")
    pairs: list[tuple[str, str]] = []
    for language in languages:
        if language == "en":
            raise ValueError("Parallel pairs need a non-English language; English is the anchor.")
        translated = _stsb_multi_sentences(directory / f"stsb-{language}-{split}.csv")
        if len(translated) != len(english):
            raise ValueError(
                f"stsb-{language}-{split}.csv has {len(translated) // 2} rows but stsb-en-{split}.csv has "
                f"{len(english) // 2}; the files are not row-aligned translations."
            )
        pairs += list(zip(english, translated))
    return pairs


def parallel_pairs_dataset(pairs: list[tuple[str, str]]) -> Dataset:
    """Columns ``anchor`` (English) and ``positive`` (translation)."""
    if not pairs:
        raise ValueError("No parallel pairs.")
    anchors, positives = zip(*pairs)
    return Dataset.from_dict({"anchor": list(anchors), "positive": list(positives)})
