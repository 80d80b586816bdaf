"""The starting sentence model (tiny:bert: built in a temporary folder; a sentence-transformers model keeps its
modules or takes the config's pooling) and the text data a config names."""

from __future__ import annotations

import pytest
from sentence_transformers import SentenceTransformer

from sbert_nonling import export_text_model
from sbert_nonling.configs import MCSEConfig, SimCSEConfig
from sbert_nonling.methods.sentence_encoder import starting_sentence_model, text_training_data


def test_tiny_encoder_is_built_out_of_sight_and_sized_by_its_options(tmp_path, monkeypatch, wiki_sentences):
    monkeypatch.chdir(tmp_path)
    model = starting_sentence_model(
        SimCSEConfig(model="tiny:bert", max_seq_length=16), wiki_sentences[:200], tiny_encoder={"hidden_size": 32}
    )
    assert list(tmp_path.iterdir()) == []
    assert model.get_embedding_dimension() == 32 and model.max_seq_length == 16
    assert model.encode(["a dog runs"]).shape == (1, 32)


def test_a_sentence_transformers_model_keeps_its_modules_unless_told(tmp_path, tiny_model):
    export_text_model(tiny_model, tmp_path / "st")  # a plain sentence-transformers model: Transformer, Pooling (cls)
    kept = starting_sentence_model(SimCSEConfig(pooling="mean", model=str(tmp_path / "st")), [])
    replaced = starting_sentence_model(
        SimCSEConfig(pooling="mean", model=str(tmp_path / "st"), keep_model_modules=[]), []
    )
    assert kept[1].pooling_mode == "cls" and replaced[1].pooling_mode == "mean"
    assert isinstance(kept, SentenceTransformer)


def test_a_continued_model_keeps_its_length_unless_the_caller_sets_it(tmp_path, tiny_model):
    """Issue 26: the recipe's default 32 tokens used to cut a continued sentence-transformers model."""
    tiny_model.max_seq_length = 48
    export_text_model(tiny_model, tmp_path / "st")
    config = SimCSEConfig(model=str(tmp_path / "st"))  # max_seq_length 32: the paper's default, not the user's choice
    assert starting_sentence_model(config, []).max_seq_length == 48
    set_by_user = starting_sentence_model(config.replace(keep_model_modules=["pooling"]), [])
    assert set_by_user.max_seq_length == 32 and set_by_user[1].pooling_mode == "cls"
    with pytest.raises(
        ValueError,
        match=r"'keep_model_modules' must be list\[Literal\['pooling', 'max_seq_length'\]\], got \['normalize'\]",
    ):
        config.replace(keep_model_modules=["normalize"])


def test_text_data_by_kind(tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("one sentence\nanother one\n", encoding="utf-8")
    dataset, sentences = text_training_data(SimCSEConfig(), text, None)
    assert sentences == ["one sentence", "another one"] and dataset["positive"] == sentences
    with pytest.raises(ValueError, match="Method 'simcse' trains on NLI triplets: pass nli_file"):
        text_training_data(SimCSEConfig(data="nli"), text, None)
    with pytest.raises(ValueError, match="data='captions' trains on captions only, which only the grounding methods"):
        text_training_data(SimCSEConfig(data="captions", name="mine"), text, None)
    assert text_training_data(MCSEConfig(data="captions"), None, None, captions_only=True) == (None, [])


def test_an_unreachable_model_is_one_line_naming_the_setting():
    with pytest.raises(
        ValueError,
        match=r"^Model 'nobody/no-such-model' \(the setting 'model', --model .*Offline: pass a local folder",
    ) as raised:
        starting_sentence_model(SimCSEConfig(model="nobody/no-such-model"), [])
    assert "\n" not in str(raised.value)


def test_an_unknown_tiny_model_name_is_one_sentence_naming_the_tiny_models():
    with pytest.raises(ValueError, match=r"^Model 'tiny:gpt' is not a tiny model; the tiny models are 'tiny:bert', "):
        starting_sentence_model(SimCSEConfig(model="tiny:gpt"), ["a sentence"])
