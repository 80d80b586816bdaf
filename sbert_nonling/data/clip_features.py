"""Frozen CLIP embeddings of captioned images and of their captions (KDMCSE's and DALR's teacher features):
extracted once, saved as safetensors beside the image names and captions, and loaded back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from tqdm.auto import tqdm

from sbert_nonling.data.frozen_clip import FrozenCLIP
from sbert_nonling.data.image_features import load_image_features, placeholder_rows, planning
from sbert_nonling.data.images import decode_image


def extract_clip_features(
    images: Sequence[Any], captions: Sequence[str], clip: FrozenCLIP, batch_size: int = 32
) -> dict[str, torch.Tensor]:
    """``{"global": (images, d), "captions": (captions, d)}``: CLIP's image embeddings of ``images`` (files, PIL
    images or undecoded Hub image values; a ValueError names a bad file) and its text embeddings of ``captions``, in
    order; save them with :func:`~sbert_nonling.data.image_features.save_image_features` (names and captions). Inside
    :func:`~sbert_nonling.data.image_features.planning_only`, placeholders after the first batch.

    Args:
        images: the images.
        captions: the captions.
        clip: the frozen CLIP.
        batch_size: images or captions per forward pass.
    """
    if not images or not captions:
        raise ValueError(f"extract_clip_features got {len(images)} images and {len(captions)} captions; both needed.")
    image_batches: list[torch.Tensor] = []
    caption_batches: list[torch.Tensor] = []
    for start in tqdm(range(0, len(images), batch_size), desc="CLIP image features", unit="batch"):
        batch = [decode_image(image, start + index) for index, image in enumerate(images[start : start + batch_size])]
        placeholder = start > 0 and planning()
        image_batches.append(
            placeholder_rows(image_batches[0], len(batch)) if placeholder else clip.encode_images(batch)
        )
    for start in tqdm(range(0, len(captions), batch_size), desc="CLIP caption features", unit="batch"):
        batch_captions = captions[start : start + batch_size]
        placeholder = start > 0 and planning()
        caption_batches.append(
            placeholder_rows(caption_batches[0], len(batch_captions))
            if placeholder
            else clip.encode_texts(batch_captions)
        )
    return {"global": torch.cat(image_batches), "captions": torch.cat(caption_batches)}


def load_clip_features(path: str | Path) -> tuple[list[str], list[str], dict[str, torch.Tensor]]:
    """The image names, the captions and the features (``"global"``, ``"captions"``) of a file written by
    ``sbert-nonling features --encoder clip-... --captions FILE``; a ValueError when it holds no caption embeddings.

    Args:
        path: the safetensors file.
    """
    names, features = load_image_features(path)
    with safe_open(str(path), framework="pt") as handle:
        captions = json.loads((handle.metadata() or {}).get("captions", "null"))
    if captions is None or "captions" not in features:
        raise ValueError(
            f"{path} holds no CLIP caption embeddings; make it with `sbert-nonling features --encoder "
            "clip-vit-large-patch14 --captions CAPTIONS_FILE`."
        )
    return names, captions, features
