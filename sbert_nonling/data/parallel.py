"""Parallel sentence pairs (English anchor, translation) for cross-lingual training (Pixel Linguist's leapfrogging)."""

from __future__ import annotations

import csv
from pathlib import Path

from datasets import Dataset

from sbert_nonling.util.validation import check_sentence, read_lines


def _stsb_multi_sentences(path: Path) -> list[str]:
    """Both sentences of every row of an stsb_multi_mt CSV (``sentence1,sentence2,score``), row by row."""
    sentences = []
    for number, row in enumerate(csv.reader(read_lines(path, "Parallel data file")), start=1):
        if len(row) != 3:
            raise ValueError(f"{path}:{number}: expected 3 columns (sentence1, sentence2, score), found {len(row)}.")
        sentences += [
            check_sentence(row[0], f"{path}:{number} sentence1"),
            check_sentence(row[1], f"{path}:{number} sentence2"),
        ]
    return sentences


def stsb_multi_parallel_pairs(
    directory: str | Path, languages: list[str], split: str = "train"
) -> list[tuple[str, str]]:
    """(English, translation) pairs of both sentences of every row of the row-aligned ``stsb-<lang>-<split>.csv``
    files.

    Args:
        directory: the folder of the stsb_multi_mt files.
        languages: the translation languages, e.g. ``["de", "fr"]``.
        split: which split's files to read.
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
    """Columns ``anchor`` (English) and ``positive`` (translation).

    Args:
        pairs: ``(English, translation)`` pairs.
    """
    if not pairs:
        raise ValueError("No parallel pairs.")
    anchors, positives = zip(*pairs)
    return Dataset.from_dict({"anchor": list(anchors), "positive": list(positives)})
