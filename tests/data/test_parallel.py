from __future__ import annotations

import pytest

from sbert_nonling.data.parallel import parallel_pairs_dataset, stsb_multi_parallel_pairs


def test_stsb_multi_rows_are_aligned_translations(data_dir):
    pairs = stsb_multi_parallel_pairs(data_dir / "stsb_multi", ["de", "zh"])
    assert len(pairs) == 2 * 2 * 5749  # two languages, both sentences of every train row
    assert ("A man is playing a guitar.", "Ein Mann spielt Gitarre.") in pairs
    dataset = parallel_pairs_dataset(pairs)
    assert dataset.column_names == ["anchor", "positive"] and dataset[0]["anchor"] == pairs[0][0]


def test_misaligned_missing_and_malformed_files_are_rejected(tmp_path):
    (tmp_path / "stsb-en-train.csv").write_text("A,B,1.0\nC,D,2.0\n")
    (tmp_path / "stsb-de-train.csv").write_text("A,B,1.0\n")
    (tmp_path / "stsb-fr-train.csv").write_text("A,B\nC,D,2.0\n")
    with pytest.raises(ValueError, match="not row-aligned"):
        stsb_multi_parallel_pairs(tmp_path, ["de"])
    with pytest.raises(ValueError, match="stsb-es-train.csv' does not exist"):
        stsb_multi_parallel_pairs(tmp_path, ["es"])
    with pytest.raises(ValueError, match="stsb-fr-train.csv:1: expected 3 columns"):
        stsb_multi_parallel_pairs(tmp_path, ["fr"])
    with pytest.raises(ValueError, match="non-English"):
        stsb_multi_parallel_pairs(tmp_path, ["en"])
