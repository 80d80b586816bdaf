"""PatchTokens: [CLS] + patch tokens (+ learned positions) of a (C, H, W) map, the block the image and audio front-ends
share."""

from __future__ import annotations

import torch
from torch import nn
from transformers import ViTConfig
from transformers.models.vit.modeling_vit import ViTEmbeddings


class PatchTokens(ViTEmbeddings):
    """transformers' ``ViTEmbeddings`` (Dosovitskiy et al., 2021): Conv2d patch projection, a learned [CLS] token first
    and, optionally, learned positions; (B, C, H, W) maps (images, or (1, mel, frames) fbanks) -> (B, 1 + N,
    embedding_dimension), N = (H / patch_size) x (W / patch_size). A square position table is bicubically
    interpolated to other grids. ViT's state dict; initialisation: Conv2d's default, [CLS] and positions truncated
    normal (std 0.02), as transformers initialises a ViT.

    Args:
        image_size: (height, width) of the map the position table is built for.
        patch_size: patch side (ViT-base: 16).
        num_channels: input channels (3 for images, 1 for an fbank).
        embedding_dimension: token width (ViT-base: 768), ViT's ``hidden_size``.
        position_embeddings: learn a position table (True) or add no positions (False).

    Example:
        ::

            import torch
            from sbert_nonling.modules.patch_tokens import PatchTokens

            block = PatchTokens((32, 32), patch_size=8, num_channels=3, embedding_dimension=16)
            tokens = block(torch.randn(2, 3, 32, 32))
            tokens.shape  # (2, 17, 16): [CLS] + 4 x 4 patches
    """

    def __init__(
        self,
        image_size: tuple[int, int],
        patch_size: int,
        num_channels: int,
        embedding_dimension: int,
        position_embeddings: bool = True,
    ) -> None:
        config = ViTConfig(
            image_size=list(image_size),
            patch_size=patch_size,
            num_channels=num_channels,
            hidden_size=embedding_dimension,
        )
        super().__init__(config)
        # transformers draws [CLS] and positions from N(0, 1) here and rescales them in ViTPreTrainedModel's
        # initialisation, which a bare ViTEmbeddings never runs: the same truncated normal (std 0.02) here.
        nn.init.trunc_normal_(self.cls_token, std=config.initializer_range)
        if position_embeddings:
            nn.init.trunc_normal_(self.position_embeddings, std=config.initializer_range)
        else:
            self.register_parameter("position_embeddings", None)
        self.interpolates = image_size[0] == image_size[1]

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        if self.position_embeddings is not None:
            return super().forward(pixel_values, interpolate_pos_encoding=self.interpolates)
        tokens = self.patch_embeddings(pixel_values)
        return torch.cat([self.cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1)
