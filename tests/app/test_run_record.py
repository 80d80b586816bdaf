"""write_run_record: recipe.json, results.json and a model card in every saved folder, each describing the model
saved there and the teachers the run used, keeping what sentence-transformers recorded (its metadata, e.g. widget,
datasets and tags, and its training details)."""

from __future__ import annotations

import json

import pytest
from huggingface_hub import ModelCard

from sbert_nonling import export_text_model
from sbert_nonling.app.recipes import get_recipe
from sbert_nonling.app.run_record import write_run_record

#: The widget a sentence-transformers trainer samples from the training data (set by hand here).
WIDGET = [{"source_sentence": "A dog runs.", "sentences": ["A dog is running.", "A cat sleeps.", "Rain falls."]}]


@pytest.fixture
def run_dir(tmp_path, tiny_model):
    """A run folder holding a tiny full model, saved with the widget and loss tag a trainer records, and its text
    export (whose README sentence-transformers writes without them)."""
    tiny_model.model_card_data.widget = WIDGET
    tiny_model.model_card_data.add_tags("loss:SimCSELoss")
    tiny_model.save(str(tmp_path / "model"))
    export_text_model(tiny_model, tmp_path / "export")
    return tmp_path


def _cards(run_dir) -> list[ModelCard]:
    return [ModelCard.load(run_dir / folder / "README.md") for folder in ("model", "export")]


def test_the_record_holds_the_settings_the_result_and_a_card_per_saved_folder(run_dir):
    settings = get_recipe("simcse-unsup", overrides={"learning_rate": 1e-4})
    result = {
        "model": str(run_dir / "model"),
        "export": str(run_dir / "export"),
        "checkpoints": None,
        "dev_before": {"STSBenchmark": 10.5, "avg": 10.5},
        "dev_after": {"STSBenchmark": 61.25, "avg": 61.25},
    }
    write_run_record(
        run_dir,
        settings,
        result,
        forms={"model": "full", "export": "text", "checkpoints": "full"},
        data=["text_file: wiki.txt"],
    )
    assert json.loads((run_dir / "recipe.json").read_text())["learning_rate"] == 1e-4
    assert json.loads((run_dir / "results.json").read_text()) == result
    full, text = _cards(run_dir)
    assert "trust_remote_code=True" in full.text and "trust_remote_code" not in text.text  # each folder's own code
    for card in (full, text):
        assert "61.25" in card.text and "10.50" in card.text and "text_file: wiki.txt" in card.text
        assert card.data.widget == WIDGET and "loss:SimCSELoss" in card.data.tags  # the trainer's record, kept
        assert card.text.count("## Training Details") == 1 and "### Framework Versions" in card.text
        assert "with settings changed from the recipe's: `learning_rate` (recipe: `3e-05`)" in card.text
        assert settings["description"] not in card.text  # lr 3e-5 is the recipe's, not this run's
    assert sorted(path.name for path in run_dir.iterdir()) == ["export", "model", "recipe.json", "results.json"]

    write_run_record(run_dir, get_recipe("simcse-unsup", overrides={"seed": 7}), result, {"export": "text"}, [])
    (text,) = _cards(run_dir)[1:]
    assert get_recipe("simcse-unsup")["description"] in text.text  # another seed trains the recipe's configuration
    assert text.data.widget == WIDGET and text.text.count("## Training Details") == 1  # written again: kept once


def test_cards_carry_every_score_the_run_computed_and_the_routes_of_the_saved_model(run_dir):
    settings = get_recipe("mcse", tiny=True)
    result = {
        "model": str(run_dir / "model"),
        "export": str(run_dir / "export"),
        "dev_before": {"STSBenchmark": 10.5, "avg": 10.5},
        "dev_after": {"STSBenchmark": 61.25, "avg": 61.25},
        "multilingual_after": {"STSBenchmarkMultilingualSTS-de": 33.5, "avg": 33.5},
        "retrieval": {"text_to_image_R@1": 12.5, "image_to_text_R@5": 37.5},
    }
    data = ["text_file: wiki.txt", "captions_file: captions.txt"]
    write_run_record(run_dir, settings, result, forms={"model": "full", "export": "text"}, data=data)
    full, text = _cards(run_dir)
    for card in (full, text):
        index = {(result.dataset_type, result.metric_type): result.metric_value for result in card.data.eval_results}
        assert index == {
            ("STSBenchmark", "spearman_cosine"): 61.25,
            ("STSBenchmarkMultilingualSTS-de", "spearman_cosine"): 33.5,
            ("captions.txt", "text_to_image_R@1"): 12.5,
            ("captions.txt", "image_to_text_R@5"): 37.5,
        }
        assert "| image to text R@5 | 37.50 |" in card.text and "| dev, after training | 33.50 | 33.50 |" in card.text
        assert card.data.datasets is None  # local files only: listed in the body
    assert "Routes: `text`.\n" in full.text and "# encodes text\n" in full.text  # the saved model's one route


def test_a_tiny_kdmcse_card_names_the_tiny_teacher_and_the_saved_model_not_the_papers(run_dir):
    settings = get_recipe("kdmcse", tiny=True)
    result = {"model": str(run_dir / "model"), "export": str(run_dir / "export")}
    data = ["text_file: wiki.txt", "captions_file: nlphuji/flickr30k?split=test"]
    write_run_record(run_dir, settings, result, forms={"model": "full", "export": "text"}, data=data)
    for card in _cards(run_dir):
        assert "- CLIP teacher: a tiny random CLIP with 32-d embeddings, built offline" in card.text
        assert not any(paper in card.text for paper in ("ViT-L/14", "clip-vit-large-patch14", "lr 3e-5", "batch 64"))
        assert "`clip_dimension` (recipe: `768`)" in card.text and "in its `tiny` form" in card.text
        # the saved model (the tiny_model fixture: cls pooling), not the tiny recipe's mean
        assert "- Encoder: `bert`, 2 layers, hidden size 32; at most 32 tokens per input." in card.text
        assert "- Pooling: `cls`: 32-d embeddings." in card.text
        assert "- `pooling`: `mean` (unused: the saved model pools `cls`)" in card.text
        assert card.data.datasets == ["nlphuji/flickr30k"] and card.data.widget == WIDGET
