"""The text-as-pixels model: render -> PIXEL encoder -> mean over unmasked patches -> L2 norm, in the real pipeline."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformer

from sbert_nonling import SymmetricInfoNCE
from sbert_nonling.models.pixel_model import build_pixel_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder

MAX_PATCHES = 24


@pytest.fixture
def pixel_model():
    torch.manual_seed(0)
    encoder = PixelEncoder.from_config(
        max_patches=MAX_PATCHES, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64
    )
    return build_pixel_model(encoder, max_patches=MAX_PATCHES).eval()


def test_encode_is_the_mean_of_unmasked_patch_tokens(pixel_model):
    sentences = ["A man is playing a guitar.", "Hi"]
    embeddings = pixel_model.encode(sentences, convert_to_tensor=True)
    assert embeddings.shape == (2, 32)
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(2))
    router, encoder = pixel_model[0], pixel_model[0].encoder
    features = router.preprocess(sentences)
    patch_counts = features["attention_mask"].sum(dim=1).tolist()
    assert patch_counts[1] < patch_counts[0] < MAX_PATCHES  # a longer text covers more patches
    with torch.no_grad():
        tokens = encoder({"pixel_values": features["pixel_values"], "attention_mask": features["attention_mask"]})[
            "token_embeddings"
        ]
    for row, count in enumerate(patch_counts):
        mean = tokens[row, :count].mean(dim=0)  # patches only: [CLS] and padding excluded
        torch.testing.assert_close(embeddings[row], mean / mean.norm(), rtol=1e-5, atol=1e-5)


def test_pixel_is_the_default_route_and_the_explicit_task(pixel_model):
    sentences = ["Ein Mann spielt Gitarre.", "一个人在弹吉他。"]
    default = pixel_model.encode(sentences, convert_to_tensor=True)
    explicit = pixel_model.encode(sentences, task="pixel", convert_to_tensor=True)
    as_documents = pixel_model.encode(sentences, task="document", convert_to_tensor=True)
    torch.testing.assert_close(default, explicit, rtol=0, atol=0)
    torch.testing.assert_close(default, as_documents, rtol=0, atol=0)


@pytest.mark.parametrize(
    "text",
    [
        "x" * 10_000,
        "🙂 emoji 🎉",
        "mixed Ελληνικά Кириллица 中文 عربي हिन्दी",
        "control\x00chars\x07 and \u200b",
        "lone \ud800 surrogate",
    ],
)
def test_odd_texts_are_encoded(pixel_model, text):
    embedding = pixel_model.encode([text], convert_to_tensor=True)
    assert embedding.shape == (1, 32) and torch.isfinite(embedding).all()


def test_empty_and_whitespace_text_is_encoded_deterministically(pixel_model):
    texts = ["fine", "", " \t", "\x00", "  "]
    embeddings = pixel_model.encode(texts, convert_to_tensor=True)
    assert torch.isfinite(embeddings).all()
    torch.testing.assert_close(
        embeddings, pixel_model.encode(texts, convert_to_tensor=True, batch_size=1), rtol=0, atol=1e-6
    )
    # "" renders as PIXEL renders it (one blank patch, then EOS), like text whose only character (U+0000) is removed
    torch.testing.assert_close(embeddings[1], embeddings[3], rtol=0, atol=1e-6)
    assert (embeddings[1] - embeddings[0]).abs().max() > 1e-3


def test_bad_inputs_name_the_item(pixel_model):
    with pytest.raises(ValueError, match="input 1 is None"):
        pixel_model.encode(["fine", None])
    with pytest.raises(ValueError, match=r"input 1 is None;.*Positions count within the batch"):
        pixel_model.encode([None, "a much longer sentence"])  # encode sorts by length: None is second in the batch
    with pytest.raises(ValueError, match="reads 24 patches but max_patches=64"):
        build_pixel_model(pixel_model[0].encoder, max_patches=64)


def test_save_and_reload_gives_the_same_embeddings(pixel_model, tmp_path):
    sentences = ["A man is playing a guitar.", "A woman slices an onion."]
    pixel_model.save(str(tmp_path / "pixel"))
    loaded = SentenceTransformer(str(tmp_path / "pixel"), trust_remote_code=True)
    torch.testing.assert_close(
        loaded.encode(sentences, convert_to_tensor=True),
        pixel_model.encode(sentences, convert_to_tensor=True),
        rtol=0,
        atol=0,
    )


def test_symmetric_info_nce_trains_the_encoder_through_rendered_text(pixel_model, wiki_sentences, tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainingArguments

    from sbert_nonling.data.perturbations import perturbation_pairs_dataset
    from sbert_nonling.training import NonLinguisticTrainer

    before = {name: parameter.detach().clone() for name, parameter in pixel_model.named_parameters()}
    pairs = perturbation_pairs_dataset(wiki_sentences[:32], ["substitute_visual"], rate=0.3)
    data = Dataset.from_list([pairs[index] for index in range(len(pairs))])
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
    )
    loss = SymmetricInfoNCE(pixel_model, temperature=0.05, token_head="linear_gelu_layernorm")
    NonLinguisticTrainer(model=pixel_model, args=args, train_dataset=data, loss=loss).train()
    changed = [name for name, parameter in pixel_model.named_parameters() if not torch.equal(parameter, before[name])]
    assert any("patch_embeddings" in name for name in changed) and any("layers.1" in name for name in changed)
    assert all("position_embeddings" not in name for name in changed)  # PIXEL's sin-cos table stays fixed
