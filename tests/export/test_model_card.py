from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from huggingface_hub import ModelCard, ModelCardData
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

from sbert_nonling import export_text_model
from sbert_nonling.app import get_recipe, train_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.export.model_card import bibtex_entries, card_for_repo, loss_citations, model_card, write_model_card
from sbert_nonling.models import build_sentence_model
from tests.conftest import cited, wiki_file

#: Where the published card of me/encoder links its example files.
ASSETS_ON_THE_HUB = "https://huggingface.co/me/encoder/resolve/main/assets/"


def test_cards_carry_method_data_scores_loading_code_and_the_losses_citations(tiny_model):
    from sbert_nonling import MultimodalAlignLoss, SimCSELoss, UnpairedModalityContrastiveLoss

    scores = {"dev, after training": {"STSBenchmark": 82.5, "SICK-R": 71.25, "avg": 76.875}}
    losses = {"image": UnpairedModalityContrastiveLoss(tiny_model), "text": SimCSELoss(tiny_model)}
    text = model_card(
        get_recipe("visualcse"),
        "text",
        scores,
        ["text_file: wiki1m.txt"],
        name="me/visualcse",
        citations=loss_citations(losses),
    )
    assert (
        text.startswith("---\n")
        and "\nlibrary_name: sentence-transformers\n" in text
        and "\nbase_model: bert-base-uncased\n" in text
    )
    assert 'SentenceTransformer("me/visualcse")' in text and "trust_remote_code" not in text
    assert "| dev, after training | 82.50 | 71.25 | 76.88 |" in text and "text_file: wiki1m.txt" in text
    assert "jian2022nonlinguistic" in text and "gao2021simcse" in text and "reimers-2019-sentence-bert" in text
    mcse = MultimodalAlignLoss(tiny_model, image_dimension=8, text_loss=SimCSELoss(tiny_model))
    full = model_card(
        get_recipe("mcse"), "full", name="me/mcse-full", citations=loss_citations(mcse) + loss_citations(mcse)
    )
    assert (
        "pip install sbert-nonling" in full and 'SentenceTransformer("me/mcse-full", trust_remote_code=True)' in full
    )
    assert full.count("@inproceedings{zhang2022mcse,") == 1  # cited once however often it is declared
    assert "rendered pixels" in model_card(get_recipe("pixel-linguist"), "pixel")
    with pytest.raises(ValueError, match="form='onnx'"):
        model_card(get_recipe("mcse"), "onnx")


def _metadata(card: str) -> ModelCardData:
    return ModelCard(card).data


def test_an_mcse_card_names_the_image_features_the_run_grounded_in():
    tiny = model_card(get_recipe("mcse", tiny=True), "text")  # the tiny block extracts efficientnet-lite0 features
    assert "frozen `efficientnet-lite0` image features (1280-d, setting `image_encoder`)" in tiny
    assert "ResNet" not in tiny and "resnet" not in tiny
    paper = model_card(get_recipe("mcse"), "text")
    assert "frozen `resnet50` image features (2048-d" in paper and "efficientnet" not in paper
    given = model_card(
        get_recipe("mcse", tiny=True),
        "text",
        training_data=["captions_file: captions.txt", "image_features: coco.safetensors"],
    )
    assert "read from `coco.safetensors` (the setting `image_encoder` unused)" in given
    assert "image features" not in model_card(get_recipe("simcse-unsup"), "text")  # no caption grounding, no such line


def test_full_model_cards_describe_the_routes_the_saved_model_has(tiny_encoder_dir, tmp_path):
    from sbert_nonling import ImagePatchEmbed
    from sbert_nonling.models import build_sentence_model

    build_sentence_model(tiny_encoder_dir).save(str(tmp_path / "one"))
    image = ImagePatchEmbed(image_size=16, patch_size=8, embedding_dimension=32)
    build_sentence_model(tiny_encoder_dir, front_ends={"image": image}).save(str(tmp_path / "two"))
    one = write_model_card(tmp_path / "one", get_recipe("simcse-unsup"), "full", name="me/one").read_text()
    two = write_model_card(tmp_path / "two", get_recipe("visualcse"), "full", name="me/two").read_text()
    assert (
        'SentenceTransformer("me/one", trust_remote_code=True)  # encodes text\n' in one and "Routes: `text`.\n" in one
    )
    assert (
        'SentenceTransformer("me/two", trust_remote_code=True)  # encodes text and images\n' in two
        and "Routes: `text`, `image`," in two
    )
    assert not any(word in one for word in ("image", "audio")) and "audio" not in two
    with pytest.raises(ValueError, match="'video' is not a route"):
        model_card(get_recipe("visualcse"), "full", routes=["text", "video"])
    with pytest.raises(ValueError, match="holds no saved sentence-transformers model"):
        write_model_card(tmp_path, get_recipe("visualcse"), "full")


def test_a_continued_sentence_transformers_model_s_cards_state_its_own_pooling_and_length(tiny_encoder_dir, tmp_path):
    minilm = tmp_path / "minilm"  # a sentence-transformers model with mean pooling, as all-MiniLM-L6-v2
    SentenceTransformer(modules=[Transformer(tiny_encoder_dir, max_seq_length=64), Pooling(32), Normalize()]).save(
        str(minilm)
    )
    continued = build_sentence_model(str(minilm))  # as a run of --model minilm builds it: its own modules kept
    continued.save(str(tmp_path / "model"))
    export_text_model(continued, tmp_path / "export")
    recipe = get_recipe("simcse-unsup", overrides={"model": str(minilm)})  # the recipe's pooling: cls
    assert recipe["pooling"] == "cls"
    for folder, form in (("model", "full"), ("export", "text")):
        card = write_model_card(tmp_path / folder, recipe, form).read_text()
        assert "- Pooling: `mean`, then Normalize: 32-d embeddings.\n" in card
        assert "- Encoder: `bert`, 2 layers, hidden size 32; at most 64 tokens per input.\n" in card
        assert "- `pooling`: `cls` (unused: the saved model pools `mean`)\n" in card
        assert "- `max_seq_length`: `32` (unused: the saved model reads 64 tokens)\n" in card


def test_cards_name_the_teachers_the_run_used():
    dalr = model_card(get_recipe("dalr"), "text")
    clip = "- CLIP teacher: frozen `openai/clip-vit-large-patch14` (768-d embeddings, setting `clip_encoder`)"
    teachers = (
        "- Text teachers: `princeton-nlp/unsup-simcse-bert-base-uncased` (0.33) and "
        "`voidism/diffcse-bert-base-uncased-sts` (0.67).\n"
    )
    assert clip in dalr and teachers in dalr
    tiny = model_card(get_recipe("dalr", tiny=True), "text", training_data=["image_features: f30k.safetensors"])
    clip = "- CLIP teacher: CLIP embeddings (128-d) read from `f30k.safetensors` (the setting `clip_encoder` unused)."
    teachers = (
        "- Text teachers: 2 tiny random BERTs (2 layers, hidden size 128) built offline on the student's vocabulary, "
        "weighted 0.33 and 0.67.\n"
    )
    assert clip in tiny and teachers in tiny
    assert "princeton-nlp" not in tiny and "ViT-L/14" not in tiny  # nor the recipe's description
    macd = model_card(get_recipe("macd"), "text")
    assert "- Anchor teacher: a frozen copy of the starting encoder, `bert-base-uncased`.\n" in macd
    assert "## Teachers" not in model_card(get_recipe("mcse"), "text")  # MCSE trains against no teacher


def test_cards_carry_scores_model_index_and_hub_metadata():
    scores = {
        "dev, before training": {"STSBenchmark": 20.0, "avg": 20.0},
        "dev, after training": {"STSBenchmark": 61.25, "SICK-R": 55.5, "avg": 58.375},
    }
    retrieval = {"text_to_image_R@1": 12.5, "image_to_text_R@1": 25.0}
    data = ["text_file: wiki.txt", "captions_file: nlphuji/flickr30k?split=test"]
    card = model_card(get_recipe("mcse"), "text", scores, data, name="me/mcse", retrieval=retrieval)
    metadata = _metadata(card)
    assert metadata.base_model == "bert-base-uncased" and metadata.datasets == ["nlphuji/flickr30k"]
    assert metadata.model_name == "me/mcse"
    index = {(result.dataset_type, result.metric_type): result.metric_value for result in metadata.eval_results}
    assert index == {  # the trained model's scores: the last row, and retrieval
        ("STSBenchmark", "spearman_cosine"): 61.25,
        ("SICK-R", "spearman_cosine"): 55.5,
        ("nlphuji/flickr30k", "text_to_image_R@1"): 12.5,
        ("nlphuji/flickr30k", "image_to_text_R@1"): 25.0,
    }
    assert "| text to image R@1 | 12.50 |" in card and "| dev, before training | 20.00 | - | 20.00 |" in card
    multilingual = {"dev, after training": {"STSBenchmarkMultilingualSTS-de": 40.0, "avg": 40.0}}
    pixel = model_card(get_recipe("pixel-linguist"), "pixel", multilingual_scores=multilingual, routes=["pixel"])
    assert (
        "| | de | Avg |" in pixel
        and "| dev, after training | 40.00 | 40.00 |" in pixel
        and "# encodes text as rendered pixels" in pixel
    )


def test_the_base_model_is_its_hub_name_or_left_out_never_a_local_path(tiny_model, tiny_encoder_dir, tmp_path):
    copy = tmp_path / "site-packages" / "all-MiniLM-L6-v2"  # a Hub model's folder, whose own card names it
    tiny_model.model_card_data.model_id, tiny_model.model_card_data.license = (
        "sentence-transformers/all-MiniLM-L6-v2",
        "apache-2.0",
    )
    tiny_model.model_card_data.language = ["en"]
    tiny_model.save(str(copy))
    snapshot = tmp_path / "hub" / "models--sentence-transformers--all-mpnet-base-v2" / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_encoder_dir, snapshot)  # the Hugging Face cache's layout names the repository
    cards = {
        folder: model_card(get_recipe("simcse-unsup", overrides={"model": str(folder)}), "text")
        for folder in (copy, snapshot, tiny_encoder_dir)
    }
    copied = _metadata(cards[copy])
    assert (copied.base_model, copied.license, copied.language) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        "apache-2.0",
        ["en"],
    )
    assert "- `model`: `sentence-transformers/all-MiniLM-L6-v2`" in cards[copy]
    assert _metadata(cards[snapshot]).base_model == "sentence-transformers/all-mpnet-base-v2"
    assert _metadata(cards[tiny_encoder_dir]).base_model is None  # a folder that names no Hub repository
    assert f"- `model`: `{Path(tiny_encoder_dir).name}`" in cards[tiny_encoder_dir]
    assert all(str(tmp_path) not in card and str(tiny_encoder_dir) not in card for card in cards.values())


def test_cards_keep_what_sentence_transformers_recorded_and_add_only_what_it_lacks(tiny_model, tmp_path):
    card_data = tiny_model.model_card_data
    card_data.license, card_data.language = "mit", ["de"]
    card_data.base_model = "org/verified-base"  # what set_base_model records once the Hub confirmed it
    evaluator = EmbeddingSimilarityEvaluator(["A dog runs."] * 3, ["A dog runs.", "Rain.", "A cat."], [1.0, 0.1, 0.2])
    evaluator(tiny_model)  # recorded in the card data: a score of these weights, before any training
    tiny_model.save(str(tmp_path / "model"))
    recorded = ModelCard.load(tmp_path / "model" / "README.md")
    text = recorded.text
    details = text[text.index("## Training Details") : text.index("## Additional Resources")]
    assert "### Framework Versions" in details and recorded.data.eval_results  # sentence-transformers' own
    scores = {"dev, after training": {"STSBenchmark": 61.25, "avg": 61.25}}
    write_model_card(tmp_path / "model", get_recipe("simcse-unsup"), "full", scores=scores)
    card = ModelCard.load(tmp_path / "model" / "README.md")
    assert card.data.base_model == "org/verified-base"  # the recorded one, not the recipe's bert-base-uncased
    assert (card.data.license, card.data.language) == ("mit", ["de"])
    assert {"sentence-transformers", "sbert-nonling", "simcse"} <= set(card.data.tags)  # this package's added
    index = {(result.dataset_type, result.metric_type): result.metric_value for result in card.data.eval_results}
    assert index == {("STSBenchmark", "spearman_cosine"): 61.25} and "metrics" not in card.data.to_dict()
    assert details.strip() in card.text  # the training details as sentence-transformers rendered them
    written = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    write_model_card(tmp_path / "model", get_recipe("simcse-unsup"), "full", scores=scores)  # written again
    assert (tmp_path / "model" / "README.md").read_text(encoding="utf-8") == written  # keeps what it kept, once


def test_the_published_card_loads_the_repo_and_names_its_model_index_after_it(tmp_path):
    scores = {"dev, after training": {"STSBenchmark": 61.25, "avg": 61.25}}
    local = model_card(get_recipe("simcse-unsup"), "text", scores, name=str(tmp_path / "export"))
    published = card_for_repo(local, "me/encoder")
    assert f'SentenceTransformer("{tmp_path / "export"}")' in local and str(tmp_path) not in published
    assert 'model = SentenceTransformer("me/encoder")  # plain sentence-transformers' in published
    assert _metadata(published).model_name == "me/encoder"
    plain = (
        "```python\nmodel = SentenceTransformer('sentence_transformers_model_id')\n```\n"  # a card without metadata
    )
    assert card_for_repo(plain, "me/encoder") == '```python\nmodel = SentenceTransformer("me/encoder")\n```\n'
    example = '| <img src="assets/example_image_0.jpg" width="200"> |\n'  # a training sample, as recorded
    assert card_for_repo(example, "me/encoder") == example.replace("assets/", ASSETS_ON_THE_HUB)


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
    assert "- Encoder: `bert`, 2 layers, hidden size 128; at most 32 tokens per input." in export_card
    sentences = set(text_file.read_text().splitlines())
    for folder in ("model", "export"):  # the widget sentence-transformers' trainer sampled from the training data
        widget = ModelCard.load(run / folder / "README.md").data.widget
        assert widget and all(example["source_sentence"] in sentences for example in widget)
    assert "trust_remote_code=True" in (run / "model" / "README.md").read_text()
    assert {"gao2021simcse", "reimers-2019-sentence-bert"} <= cited(run / "model") and "gao2021simcse" in cited(
        run / "export"
    )
    SentenceTransformer(str(run / "export")).encode(["The card did not break loading."])
