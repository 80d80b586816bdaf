from __future__ import annotations

import pytest
import torch
from sentence_transformers.sentence_transformer.modules import Transformer

from sbert_nonling import SharedEncoder
from sbert_nonling.modules.shared_encoder import BYPASS_ENTRY_KEY, EMBEDDINGS_ENTRY_KEY


@pytest.fixture
def encoder(tiny_encoder_dir):
    module = SharedEncoder(tiny_encoder_dir, max_seq_length=32)
    module.eval()
    return module


def test_text_path_is_the_builtin_transformer(encoder, tiny_encoder_dir):
    plain = Transformer(tiny_encoder_dir, max_seq_length=32).eval()
    sentences = ["A man is playing a guitar.", "Two dogs run."]
    ours = encoder(encoder.preprocess(sentences))["token_embeddings"]
    reference = plain(plain.preprocess(sentences))["token_embeddings"]
    torch.testing.assert_close(ours, reference, rtol=0, atol=0)


def test_embeddings_entry_goes_through_the_embedding_layer(encoder):
    tokens = torch.randn(2, 5, 32)
    mask = torch.ones(2, 5, dtype=torch.long)
    with torch.no_grad():
        ours = encoder({EMBEDDINGS_ENTRY_KEY: tokens, "attention_mask": mask})["token_embeddings"]
        reference = encoder.auto_model(inputs_embeds=tokens, attention_mask=mask).last_hidden_state
        bypassed = encoder({BYPASS_ENTRY_KEY: tokens, "attention_mask": mask})["token_embeddings"]
    torch.testing.assert_close(ours, reference)
    # Position / token-type embeddings and the embedding LayerNorm make the two entries differ.
    assert not torch.allclose(ours, bypassed, atol=1e-3)


def test_bypass_equals_the_encoder_layers_on_the_raw_tokens(encoder):
    tokens = torch.randn(2, 6, 32)
    mask = torch.ones(2, 6, dtype=torch.long)
    with torch.no_grad():
        ours = encoder({BYPASS_ENTRY_KEY: tokens, "attention_mask": mask})["token_embeddings"]
        hidden = tokens
        for layer in encoder.auto_model.encoder.layer:
            hidden = layer(hidden, None)
    torch.testing.assert_close(ours, hidden)


def test_bypass_masks_padding_with_a_4d_mask(encoder):
    torch.manual_seed(0)
    short = torch.randn(1, 4, 32)
    padded = torch.cat([short, 100 * torch.randn(1, 3, 32)], dim=1)  # large garbage in the padded positions
    with torch.no_grad():
        alone = encoder({BYPASS_ENTRY_KEY: short, "attention_mask": torch.ones(1, 4, dtype=torch.long)})
        masked = encoder({BYPASS_ENTRY_KEY: padded, "attention_mask": torch.tensor([[1, 1, 1, 1, 0, 0, 0]])})
        unmasked = encoder({BYPASS_ENTRY_KEY: padded, "attention_mask": torch.ones(1, 7, dtype=torch.long)})
    torch.testing.assert_close(masked["token_embeddings"][:, :4], alone["token_embeddings"], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(unmasked["token_embeddings"][:, :4], alone["token_embeddings"], atol=1e-3)


def test_bypass_rejects_tokens_of_the_wrong_width(encoder):
    with pytest.raises(ValueError, match=r"shape \(batch, tokens, 32\)"):
        encoder({BYPASS_ENTRY_KEY: torch.randn(1, 3, 16), "attention_mask": torch.ones(1, 3, dtype=torch.long)})
