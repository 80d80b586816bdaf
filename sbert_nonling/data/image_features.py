"""Frozen image features for grounding losses (MCSE, MACD; CLIP's for KDMCSE, DALR): extracted, saved and loaded as
safetensors."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torchvision.transforms import v2
from tqdm.auto import tqdm

from sbert_nonling.data import frozen_image_encoder
from sbert_nonling.data.images import decode_image
from sbert_nonling.util.validation import check_safetensors_file

#: MCSE's preprocessing for frozen image features: Resize 256, CenterCrop 224, then ImageNet normalisation
#: (:data:`~sbert_nonling.data.frozen_image_encoder.NORMALIZE_TRANSFORM`).
FEATURE_TRANSFORM = v2.Compose(
    [v2.PILToTensor(), v2.Resize(256, antialias=True), v2.CenterCrop(224), frozen_image_encoder.NORMALIZE_TRANSFORM]
)


#: How to get a good features file, said when one cannot be read.
FEATURES_REMEDY = "extract them again (extract_image_features / extract_clip_features, or sbert-nonling features)"


#: Set inside :func:`planning_only`.
_PLANNING_ONLY = contextvars.ContextVar("planning_only", default=False)


@contextmanager
def planning_only() -> Iterator[None]:
    """Inside the block, feature extraction (:func:`extract_image_features`,
    :func:`~sbert_nonling.data.clip_features.extract_clip_features`) still decodes and checks every image, as a run
    does, but runs its encoder on the first batch alone and gives every later row zero features of the same shape:
    what a dry run needs to build a plan (shapes, datasets, every check) without the hours an extraction can take.

    Example::

        from sbert_nonling.data.image_features import planning_only

        with planning_only():
            pass  # e.g. plan = build(config, data): its image features are placeholders, not for training
    """
    token = _PLANNING_ONLY.set(True)
    try:
        yield
    finally:
        _PLANNING_ONLY.reset(token)


def placeholder_rows(batch: torch.Tensor, rows: int) -> torch.Tensor:
    """Zero features shaped as one encoded ``batch``'s rows, ``rows`` of them (:func:`planning_only`).

    Args:
        batch: an encoded batch, (B, ...).
        rows: the rows wanted.
    """
    return batch.new_zeros((rows, *batch.shape[1:]))


def planning() -> bool:
    """Whether extraction is inside :func:`planning_only`."""
    return _PLANNING_ONLY.get()


def extract_image_features(
    image_paths: Sequence[Any],
    encoder: frozen_image_encoder.FrozenImageEncoder,
    batch_size: int = 32,
    regions: bool = False,
) -> dict[str, torch.Tensor]:
    """``{"global": (N, C)}`` (plus ``"regions": (N, H * W, C)`` if asked) of image files, PIL images or undecoded Hub
    image values, in order (:func:`~sbert_nonling.data.images.decode_image`: a ValueError names a bad file); inside
    :func:`planning_only`, placeholders after the first batch.

    Args:
        image_paths: image files, PIL images or undecoded Hub image values.
        encoder: the frozen image encoder.
        batch_size: images per forward pass.
        regions: also return the region grid of every image (MACD's DAMSM term needs it).
    """
    device = next(encoder.parameters()).device
    global_features: list[torch.Tensor] = []
    region_features: list[torch.Tensor] = []
    for start in tqdm(range(0, len(image_paths), batch_size), desc="Image features", unit="batch"):
        batch = image_paths[start : start + batch_size]
        decoded = [decode_image(image, start + index) for index, image in enumerate(batch)]
        if start > 0 and planning():
            global_features.append(placeholder_rows(global_features[0], len(batch)))
            if regions:
                region_features.append(placeholder_rows(region_features[0], len(batch)))
            continue
        pixels = torch.stack([FEATURE_TRANSFORM(image) for image in decoded])
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


def save_image_features(
    path: str | Path, names: Sequence[str], features: dict[str, torch.Tensor], captions: Sequence[str] | None = None
) -> Path:
    """Write ``features`` as safetensors with the image names (one per row) and the captions (one per row of
    ``features["captions"]``, CLIP's caption embeddings) in the metadata.

    Args:
        path: the safetensors file to write.
        names: the image names, one per row of every image tensor.
        features: ``{"global": (N, C)}`` and optionally ``{"regions": (N, H * W, C)}`` or
            ``{"captions": (captions, C)}``.
        captions: the captions of the rows of ``features["captions"]``.
    """
    if ("captions" in features) != (captions is not None):
        raise ValueError("save_image_features: pass captions exactly when the features hold caption embeddings.")
    metadata = {"names": json.dumps(list(names))}
    if captions is not None:
        if len(captions) != features["captions"].shape[0]:
            raise ValueError(f"{len(captions)} captions but {features['captions'].shape[0]} caption embeddings.")
        metadata["captions"] = json.dumps(list(captions))
    lengths = {key: value.shape[0] for key, value in features.items() if key != "captions"}
    if any(length != len(names) for length in lengths.values()):
        raise ValueError(f"{len(names)} image names but feature rows {lengths}; they must match.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({key: value.contiguous() for key, value in features.items()}, str(path), metadata=metadata)
    return path


def load_image_features(path: str | Path) -> tuple[list[str], dict[str, torch.Tensor]]:
    """The image names and features written by :func:`save_image_features`.

    Args:
        path: a file written by :func:`save_image_features`.
    """
    check_safetensors_file(path, "The features file", FEATURES_REMEDY)
    with safe_open(str(path), framework="pt") as handle:
        names = json.loads((handle.metadata() or {}).get("names", "null"))
    if names is None:
        raise ValueError(f"{path} has no image names in its metadata; write it with save_image_features.")
    return names, load_file(str(path))
