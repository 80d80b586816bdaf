"""write_run_record: recipe.json, results.json and a model card in every saved folder."""

from __future__ import annotations

import json

from sbert_nonling.app.recipes import get_recipe
from sbert_nonling.app.run_record import write_run_record


def test_the_record_holds_the_settings_the_result_and_a_card_per_saved_folder(tmp_path):
    settings = get_recipe("simcse-unsup") | {"learning_rate": 1e-4}
    (tmp_path / "model").mkdir()
    (tmp_path / "export").mkdir()
    result = {
        "model": str(tmp_path / "model"),
        "export": str(tmp_path / "export"),
        "checkpoints": None,
        "dev_before": {"STSBenchmark": 10.5, "avg": 10.5},
        "dev_after": {"STSBenchmark": 61.25, "avg": 61.25},
    }
    write_run_record(tmp_path, settings, result, forms={"model": "full", "export": "text", "checkpoints": "full"}, data=["text_file: wiki.txt"])
    assert json.loads((tmp_path / "recipe.json").read_text())["learning_rate"] == 1e-4
    assert json.loads((tmp_path / "results.json").read_text()) == result
    full, text = (tmp_path / "model" / "README.md").read_text(), (tmp_path / "export" / "README.md").read_text()
    assert "trust_remote_code=True" in full and "trust_remote_code" not in text  # each folder's own loading code
    for card in (full, text):
        assert "61.25" in card and "10.50" in card and "text_file: wiki.txt" in card
    assert sorted(path.name for path in tmp_path.iterdir()) == ["export", "model", "recipe.json", "results.json"]
