"""PatchTokens: transformers' ViT embeddings (names, interpolation), optionally without positions; the rectangular
SSAST table is checked against saved outputs in test_front_end.py."""

from __future__ import annotations

import torch
from transformers import ViTConfig
from transformers.models.vit.modeling_vit import ViTEmbeddings

from sbert_nonling.modules.patch_tokens import PatchTokens


def test_equals_vit_embeddings_with_the_same_weights_at_any_square_grid():
    block = PatchTokens((32, 32), patch_size=8, num_channels=3, embedding_dimension=16).eval()
    vit = ViTEmbeddings(ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=16)).eval()
    vit.load_state_dict(block.state_dict())
    for size in (32, 48):
        pixels = torch.randn(2, 3, size, size)
        torch.testing.assert_close(block(pixels), vit(pixels, interpolate_pos_encoding=True), rtol=0, atol=0)


def test_without_positions_the_tokens_are_cls_then_the_projected_patches():
    block = PatchTokens((32, 48), patch_size=16, num_channels=1, embedding_dimension=8, position_embeddings=False)
    assert block.position_embeddings is None and "position_embeddings" not in block.state_dict()
    fbank = torch.randn(2, 1, 32, 48)
    tokens = block(fbank)
    assert tokens.shape == (2, 1 + 6, 8)
    torch.testing.assert_close(tokens[:, 0], block.cls_token[0].expand(2, -1))
    torch.testing.assert_close(tokens[:, 1:], block.patch_embeddings.projection(fbank).flatten(2).transpose(1, 2))
