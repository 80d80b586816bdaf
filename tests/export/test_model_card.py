from __future__ import annotations

import json

import pytest
from sentence_transformers import SentenceTransformer

from sbert_nonling.export.model_card import model_card
from sbert_nonling.training import get_recipe, train_recipe


def test_cards_carry_method_data_scores_loading_code_and_citations():
    scores = {"dev, after training": {"STSBenchmark": 82.5, "SICK-R": 71.25, "avg": 76.875}}
    text = model_card(get_recipe("visualcse"), "text", scores, ["text_file: wiki1m.txt"], name="me/visualcse")
    assert text.startswith("---\nlibrary_name: sentence-transformers") and "base_model: bert-base-uncased" in text
    assert 'SentenceTransformer("me/visualcse")' in text and "trust_remote_code" not in text
    assert "| dev, after training | 82.50 | 71.25 | 76.88 |" in text and "text_file: wiki1m.txt" in text
    assert "jian2022nonlinguistic" in text and "gao2021simcse" in text and "reimers2019sentencebert" in text
    full = model_card(get_recipe("mcse"), "full", name="me/mcse-full")
    assert "pip install sbert-nonling" in full and 'SentenceTransformer("me/mcse-full", trust_remote_code=True)' in full
    assert "zhang2022mcse" in full
    assert "rendered pixels" in model_card(get_recipe("pixel-linguist"), "pixel") and "xiao2024pixel" in model_card(
        get_recipe("pixel-linguist"), "pixel"
    )
    with pytest.raises(ValueError, match="form='onnx'"):
        model_card(get_recipe("mcse"), "onnx")


def test_recipe_runs_leave_settings_results_and_cards(tmp_path, data_dir, small_sts_dir):
    text_file = tmp_path / "wiki.txt"
    lines = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:200]
    text_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = train_recipe(
        "simcse-unsup",
        tmp_path / "run",
        text_file=text_file,
        sts_dir=small_sts_dir,
        tiny=True,
        max_steps=2,
        overrides={"batch_size": 16, "eval_steps": 2},
    )
    run = tmp_path / "run"
    assert json.loads((run / "recipe.json").read_text())["name"] == "simcse-unsup"
    assert json.loads((run / "results.json").read_text())["dev_after"] == result["dev_after"]
    export_card = (run / "export" / "README.md").read_text()
    assert "trust_remote_code" not in export_card and f"{result['dev_after']['STSBenchmark']:.2f}" in export_card
    assert "pipeline check, not a usable encoder" in export_card  # tiny runs say so
    assert "trust_remote_code=True" in (run / "model" / "README.md").read_text()
    SentenceTransformer(str(run / "export")).encode(["The card did not break loading."])
