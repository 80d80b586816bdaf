"""Fixtures of the application tests: an STS folder holding STS-B dev and the 7 test sets (``reproduce``'s input)."""

from __future__ import annotations

import pytest

from sbert_nonling.evaluation.sts_data import STS_YEAR_SUBSETS


@pytest.fixture(scope="module")
def sts_test_dir(tmp_path_factory, data_dir):
    """STS-B dev and the 7 test sets in SentEval's layout, made of STS-B dev / SICK trial pairs (the shared data has no
    test split): 40 pairs for STS-B dev and test, 30 for SICK-R, 2 per subset of STS12-16."""
    root = tmp_path_factory.mktemp("sts-test")
    stsb = (data_dir / "sts" / "STSBenchmark" / "sts-dev.csv").read_text(encoding="utf-8").splitlines()
    sick = (data_dir / "sts" / "SICK" / "SICK_trial.txt").read_text(encoding="utf-8").splitlines()
    (root / "STSBenchmark").mkdir()
    (root / "SICK").mkdir()
    (root / "STSBenchmark" / "sts-dev.csv").write_text("\n".join(stsb[:40]) + "\n", encoding="utf-8")
    (root / "STSBenchmark" / "sts-test.csv").write_text("\n".join(stsb[40:80]) + "\n", encoding="utf-8")
    (root / "SICK" / "SICK_test_annotated.txt").write_text("\n".join(sick[:31]) + "\n", encoding="utf-8")
    rows = iter(stsb[80:])
    for year, subsets in STS_YEAR_SUBSETS.items():
        folder = root / f"{year}-en-test"
        folder.mkdir()
        for subset in subsets:
            pairs = [next(rows).split("\t") for _ in range(3)]
            inputs = "".join(f"{row[5]}\t{row[6]}\n" for row in pairs)
            (folder / f"STS.input.{subset}.txt").write_text(inputs, encoding="utf-8")
            (folder / f"STS.gs.{subset}.txt").write_text("".join(f"{row[4]}\n" for row in pairs), encoding="utf-8")
    return root
