"""FrozenImageEncoder: frozen in every mode, global vector = mean of the region grid, uint8 pixels normalised."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sbert_nonling.data import FrozenImageEncoder
from sbert_nonling.data.frozen_image_encoder import NORMALIZE_TRANSFORM


def test_stays_frozen_and_pools_its_region_grid():
    torch.manual_seed(0)
    encoder = FrozenImageEncoder(nn.Sequential(nn.Conv2d(3, 4, 8, stride=8), nn.BatchNorm2d(4)))
    encoder.train()
    assert not encoder.training and not encoder.backbone.training
    assert not any(parameter.requires_grad for parameter in encoder.parameters())
    pixels = torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8)
    pooled, regions = encoder(pixels)
    assert regions.shape == (2, 16, 4) and torch.allclose(pooled, regions.mean(dim=1))
    torch.testing.assert_close(encoder(NORMALIZE_TRANSFORM(pixels))[1], regions)  # uint8 input is normalised first
    with pytest.raises(ValueError, match=r"\(B, C, H, W\) feature map, got shape \(2, 4\)"):
        FrozenImageEncoder(nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 4)))(pixels.float())
