from __future__ import annotations

import json

import pytest
from sentence_transformers import SentenceTransformer

from sbert_nonling.app import get_recipe, train_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.export.model_card import bibtex_entries, loss_citations, model_card
from tests.conftest import cited, wiki_file


def test_cards_carry_method_data_scores_loading_code_and_the_losses_citations(tiny_model):
    from sbert_nonling import MultimodalAlignLoss, SimCSELoss, UnpairedModalityContrastiveLoss

    scores = {"dev, after training": {"STSBenchmark": 82.5, "SICK-R": 71.25, "avg": 76.875}}
    losses = {"image": UnpairedModalityContrastiveLoss(tiny_model), "text": SimCSELoss(tiny_model)}
    text = model_card(get_recipe("visualcse"), "text", scores, ["text_file: wiki1m.txt"], name="me/visualcse", citations=loss_citations(losses))
    assert text.startswith("---\nlibrary_name: sentence-transformers") and "base_model: bert-base-uncased" in text
    assert 'SentenceTransformer("me/visualcse")' in text and "trust_remote_code" not in text
    assert "| dev, after training | 82.50 | 71.25 | 76.88 |" in text and "text_file: wiki1m.txt" in text
    assert "jian2022nonlinguistic" in text and "gao2021simcse" in text and "reimers2019sentencebert" in text
    mcse = MultimodalAlignLoss(tiny_model, image_dimension=8, text_loss=SimCSELoss(tiny_model))
    full = model_card(get_recipe("mcse"), "full", name="me/mcse-full", citations=loss_citations(mcse) + loss_citations(mcse))
    assert "pip install sbert-nonling" in full and 'SentenceTransformer("me/mcse-full", trust_remote_code=True)' in full
    assert full.count("@inproceedings{zhang2022mcse,") == 1  # cited once however often it is declared
    assert "rendered pixels" in model_card(get_recipe("pixel-linguist"), "pixel")
    with pytest.raises(ValueError, match="form='onnx'"):
        model_card(get_recipe("mcse"), "onnx")


def test_bibtex_entries_split_and_keep_the_first_of_each_key():
    first = "@misc{a,\n    title = {A}\n}\n@article{b,\n    title = {B}\n}\n"
    assert bibtex_entries([first, "\n@misc{a,\n    title = {A again}\n}", "@book{c, title = {C}}"]) == [
        "@misc{a,\n    title = {A}\n}",
        "@article{b,\n    title = {B}\n}",
        "@book{c, title = {C}}",
    ]


def test_recipe_runs_leave_settings_results_and_cards(tmp_path, data_dir, small_sts_dir):
    text_file = wiki_file(tmp_path / "wiki.txt", 200)
    result = train_recipe(
        "simcse-unsup",
        tmp_path / "run",
        DataSources(text_file=text_file, sts_dir=small_sts_dir),
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
    assert {"gao2021simcse", "reimers2019sentencebert"} <= cited(run / "model") and "gao2021simcse" in cited(run / "export")
    SentenceTransformer(str(run / "export")).encode(["The card did not break loading."])
