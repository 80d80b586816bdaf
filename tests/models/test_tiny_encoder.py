from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer, BertConfig, BertModel

from sbert_nonling import PixelEncoder
from sbert_nonling.models import (
    build_sentence_model,
    build_tiny_clip,
    build_tiny_encoder,
    build_tiny_pixel,
    resolve_model,
)
from sbert_nonling.models.tiny_encoder import TINY_PIXEL, save_word_piece_tokenizer, seeded_model


def test_same_sentences_and_seed_give_the_same_tokenizer_and_weights(tmp_path, wiki_sentences):
    first = build_tiny_encoder(tmp_path / "a", wiki_sentences[:500], vocab_size=1000, hidden_size=32)
    second = build_tiny_encoder(tmp_path / "b", wiki_sentences[:500], vocab_size=1000, hidden_size=32)
    vocab = AutoTokenizer.from_pretrained(first).get_vocab()
    assert vocab == AutoTokenizer.from_pretrained(second).get_vocab()
    assert [vocab[token] for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [0, 1, 2, 3, 4]
    weights_a, weights_b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    assert weights_a.keys() == weights_b.keys() and all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)


def test_tiny_encoder_errors(tmp_path):
    with pytest.raises(ValueError, match="at least one non-empty sentence"):
        build_tiny_encoder(tmp_path, ["", "  "])
    with pytest.raises(ValueError, match="hidden_size=30 must be divisible by num_attention_heads=4"):
        build_tiny_encoder(tmp_path, ["a sentence"], hidden_size=30, num_attention_heads=4)


def test_pooling_choices(tiny_encoder_dir):
    assert [type(module).__name__ for module in build_sentence_model(tiny_encoder_dir, pooling="cls_mlp")] == [
        "ModalityRouter",
        "Pooling",
        "Dense",
    ]
    assert build_sentence_model(tiny_encoder_dir, pooling="mean")[1].pooling_mode == "mean"
    with pytest.raises(ValueError, match="pooling='max' is not one of"):
        build_sentence_model(tiny_encoder_dir, pooling="max")


def test_a_tiny_clip_is_the_same_for_the_same_captions_and_seed(tmp_path):
    captions = ["a dog runs on the beach", "a red square"]
    first, second = build_tiny_clip(tmp_path / "a", captions), build_tiny_clip(tmp_path / "b", captions)
    other = build_tiny_clip(tmp_path / "c", captions, seed=1)
    weights_a, weights_b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    assert weights_a.keys() == weights_b.keys() and all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    weights_c = load_file(other / "model.safetensors")
    assert not torch.equal(weights_a["text_projection.weight"], weights_c["text_projection.weight"])
    assert (
        weights_a["text_projection.weight"].shape == (32, 32) and "dog" in AutoTokenizer.from_pretrained(first).vocab
    )
    with pytest.raises(ValueError, match="at least one non-empty sentence"):
        build_tiny_clip(tmp_path / "d", [" "])


def test_a_seeded_model_leaves_the_callers_generator_as_it_was():
    config = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    first = seeded_model(BertModel, config, seed=5)
    assert torch.equal(torch.rand(3), expected)
    second = seeded_model(BertModel, config, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))


def test_the_tokenizer_writer_skips_blank_sentences_and_refuses_none_left(tmp_path):
    tokenizer = save_word_piece_tokenizer(tmp_path / "tokenizer", ["", "A dog runs."], vocab_size=100)
    assert tokenizer.tokenize("a dog runs") == ["a", "dog", "runs"]
    assert AutoTokenizer.from_pretrained(tmp_path / "tokenizer").get_vocab() == tokenizer.get_vocab()
    with pytest.raises(ValueError, match="^sentences must hold at least one non-empty sentence"):
        save_word_piece_tokenizer(tmp_path / "empty", ["  "], vocab_size=100)


def _same_weights(first, second) -> bool:
    weights_a, weights_b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    return weights_a.keys() == weights_b.keys() and all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)


def test_a_tiny_model_name_is_built_in_a_temporary_folder_and_any_other_name_is_given_back(tmp_path, wiki_sentences):
    sentences = wiki_sentences[:200]
    with resolve_model("tiny:bert", sentences, seed=3, vocab_size=1000, hidden_size=32) as folder:
        built = Path(folder)
        assert _same_weights(built, build_tiny_encoder(tmp_path / "bert", sentences, 1000, seed=3, hidden_size=32))
    assert not built.exists()
    with resolve_model("tiny:clip", sentences, seed=3, projection_dim=16) as folder:
        assert _same_weights(Path(folder), build_tiny_clip(tmp_path / "clip", sentences, projection_dim=16, seed=3))
    for name in ("bert-base-uncased", str(tmp_path / "bert")):
        with resolve_model(name, sentences, hidden_size=32) as given:
            assert given == name


def test_a_tiny_pixel_encoder_is_drawn_as_a_tiny_run_drew_it_after_set_seed(tmp_path):
    torch.manual_seed(7)
    drawn = PixelEncoder.from_config(max_patches=8, **TINY_PIXEL)  # a --tiny run before tiny:pixel
    expected = torch.rand(3)  # and the draws that came next
    with resolve_model("tiny:pixel", seed=7, max_patches=8) as folder:
        encoder = PixelEncoder.from_pretrained(folder, max_patches=8)
    assert torch.equal(torch.rand(3), expected)
    assert encoder.max_patches == 8 and encoder.get_embedding_dimension() == TINY_PIXEL["hidden_size"]
    assert not encoder.model.embeddings.position_embeddings.requires_grad  # the fixed sin-cos table, as drawn
    weights, reference = encoder.state_dict(), drawn.state_dict()
    assert weights.keys() == reference.keys() and all(torch.equal(weights[k], reference[k]) for k in weights)
    smaller = PixelEncoder.from_pretrained(build_tiny_pixel(tmp_path / "pixel", max_patches=8, hidden_size=32), 8)
    assert smaller.get_embedding_dimension() == 32


def test_an_unknown_tiny_model_name_is_refused_naming_the_tiny_models():
    with pytest.raises(
        ValueError,
        match=r"^Model 'tiny:roberta' is not a tiny model; the tiny models are 'tiny:bert', 'tiny:clip', "
        r"'tiny:pixel'\.$",
    ):
        with resolve_model("tiny:roberta", ["a sentence"]):
            pass
