"""write_run_record: recipe.json, results.json and a model card in every saved folder."""

from __future__ import annotations

import json

from huggingface_hub import ModelCard

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
    write_run_record(
        tmp_path,
        settings,
        result,
        forms={"model": "full", "export": "text", "checkpoints": "full"},
        data=["text_file: wiki.txt"],
    )
    assert json.loads((tmp_path / "recipe.json").read_text())["learning_rate"] == 1e-4
    assert json.loads((tmp_path / "results.json").read_text()) == result
    full, text = (tmp_path / "model" / "README.md").read_text(), (tmp_path / "export" / "README.md").read_text()
    assert "trust_remote_code=True" in full and "trust_remote_code" not in text  # each folder's own loading code
    for card in (full, text):
        assert "61.25" in card and "10.50" in card and "text_file: wiki.txt" in card
    assert sorted(path.name for path in tmp_path.iterdir()) == ["export", "model", "recipe.json", "results.json"]


def test_cards_carry_every_score_the_run_computed_and_the_routes_of_the_saved_model(tmp_path, tiny_model):
    settings = get_recipe("mcse", tiny=True)
    tiny_model.save(str(tmp_path / "model"))
    (tmp_path / "export").mkdir()
    result = {
        "model": str(tmp_path / "model"),
        "export": str(tmp_path / "export"),
        "dev_before": {"STSBenchmark": 10.5, "avg": 10.5},
        "dev_after": {"STSBenchmark": 61.25, "avg": 61.25},
        "multilingual_after": {"STSBenchmarkMultilingualSTS-de": 33.5, "avg": 33.5},
        "retrieval": {"text_to_image_R@1": 12.5, "image_to_text_R@5": 37.5},
    }
    data = ["text_file: wiki.txt", "captions_file: captions.txt"]
    write_run_record(tmp_path, settings, result, forms={"model": "full", "export": "text"}, data=data)
    full, text = (ModelCard.load(tmp_path / folder / "README.md") for folder in ("model", "export"))
    for card in (full, text):
        index = {(result.dataset_type, result.metric_type): result.metric_value for result in card.data.eval_results}
        assert index == {
            ("STSBenchmark", "spearman_cosine"): 61.25,
            ("STSBenchmarkMultilingualSTS-de", "spearman_cosine"): 33.5,
            ("captions.txt", "text_to_image_R@1"): 12.5,
            ("captions.txt", "image_to_text_R@5"): 37.5,
        }
        assert "| image to text R@5 | 37.50 |" in card.text and "| dev, after training | 33.50 | 33.50 |" in card.text
    assert "Routes: `text`.\n" in full.text and "# encodes text\n" in full.text  # the saved model's one route
