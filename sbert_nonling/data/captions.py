"""Image-caption pairs (Flickr8k/30k token files, CSV, JSONL) joined with precomputed image features."""

from __future__ import annotations

import csv
import json
import logging
import random
from pathlib import Path
from typing import Any

import torch
from datasets import Array2D, Dataset, Features, List, Value
from datasets import Image as ImageFeature

from sbert_nonling.data.hub import CAPTION_ROLES, HubSource, hub_source, load_hub_columns
from sbert_nonling.util.validation import check_sentence, read_lines

logger = logging.getLogger(__name__)


def read_captions(path: str | Path, image_dir: str | Path | None = None) -> list[tuple[str, str]]:
    """``(image file name, caption)`` pairs from a Flickr token file (``name.jpg#n<TAB>caption``), an ``image,caption``
    CSV or JSONL ``{"image": ..., "caption": ...}``; with ``image_dir``, captions whose image is absent are skipped.

    Args:
        path: the captions file (``.txt`` / ``.token`` Flickr format, ``.csv`` or ``.jsonl``).
        image_dir: the folder of the images; None keeps every caption.
    """
    path = Path(path)
    lines = read_lines(path, "Captions file")
    if path.suffix == ".csv":
        rows = list(csv.DictReader(lines))
        if rows and not {"image", "caption"} <= set(rows[0]):
            raise ValueError(f"{path}: expected columns 'image' and 'caption', found {sorted(rows[0])}.")
        numbered: list[tuple[str, Any]] = [(f"{path}:{number}", row) for number, row in enumerate(rows, start=2)]
    else:
        numbered = [(f"{path}:{number}", line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise ValueError(f"Captions file {str(path)!r} holds no captions (it is empty); give a file with captions.")
    pairs = [_caption_pair(where, row, path.suffix) for where, row in numbered]
    if image_dir is not None:
        available = {entry.name for entry in Path(image_dir).iterdir()}
        kept = [pair for pair in pairs if pair[0] in available]
        if len(kept) < len(pairs):
            logger.warning(
                f"{path}: skipped {len(pairs) - len(kept)} of {len(pairs)} captions whose image is not in {image_dir}"
            )
        pairs = kept
    if not pairs:
        raise ValueError(
            f"{path}: no (image, caption) pairs{' with an image in ' + str(image_dir) if image_dir else ''}."
        )
    return pairs


def hub_caption_pairs(source: HubSource) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """``(image name, caption)`` pairs of a Hub image-caption dataset and each name's undecoded image.

    Args:
        source: the Hub dataset and its ``image`` / ``caption`` columns (:func:`~sbert_nonling.data.hub.hub_source`).
    """
    dataset = load_hub_columns(source, CAPTION_ROLES)
    if isinstance(dataset.features["image"], ImageFeature):
        dataset = dataset.cast_column("image", ImageFeature(decode=False))
    items = dataset["image"]
    paths = [Path(item["path"]).name if isinstance(item, dict) and item.get("path") else None for item in items]
    named = [path for path in paths if path is not None]
    names = (
        named
        if len(named) == len(paths) and len(set(named)) == len(named)
        else [f"row-{row}" for row in range(len(items))]
    )
    pairs = []
    for row, (name, captions) in enumerate(zip(names, dataset["caption"])):
        for caption in captions if isinstance(captions, list) else [captions]:
            pairs.append((name, check_sentence(caption, f"{source} row {row} caption")))
    if not pairs:
        raise ValueError(f"The Hub dataset {str(source)!r} holds no (image, caption) pairs.")
    return pairs, dict(zip(names, items))


def load_caption_pairs(
    captions: str | Path, image_dir: str | Path | None = None
) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """``(image name, caption)`` pairs and each name's image: :func:`read_captions` + ``image_dir``, or
    :func:`hub_caption_pairs`.

    Args:
        captions: a captions file (:func:`read_captions`) or a Hub dataset name with ``?image=COL&caption=COL``.
        image_dir: the folder of the images of a captions file; ignored for a Hub dataset, whose rows hold the images.
    """
    source = hub_source(captions, CAPTION_ROLES)
    if source is not None:
        return hub_caption_pairs(source)
    if image_dir is None:
        raise ValueError(
            f"Captions file {str(captions)!r} names images: pass image_dir, the folder holding them (or a Hub "
            "image-caption dataset, owner/name?image=COLUMN&caption=COLUMN, which brings its images)."
        )
    pairs = read_captions(captions, image_dir=image_dir)
    return pairs, {name: Path(image_dir) / name for name, _ in pairs}


def _caption_pair(where: str, row: Any, suffix: str) -> tuple[str, str]:
    """The checked (image, caption) of a CSV row (dict), JSONL line or token-file line."""
    if suffix == ".jsonl":
        try:
            record = json.loads(row)
            image, caption = record["image"], record["caption"]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"{where}: expected a JSON object with 'image' and 'caption' ({error}).") from None
    elif suffix == ".csv":
        image, caption = row["image"], row["caption"]
    else:
        image, separator, caption = row.partition("\t")
        if not separator:
            raise ValueError(f"{where}: expected '<image>#<n><TAB><caption>'.")
        image, caption = image.split("#")[0], caption.strip()
    if isinstance(image, int) and not isinstance(image, bool):  # JSON integers such as COCO ids
        image = str(image)
    if not isinstance(image, str) or not image.strip():
        raise ValueError(f"{where} image is {image!r}; expected a non-empty image file name.")
    return image, check_sentence(caption, f"{where} caption")


def sample_one_caption_per_image(pairs: list[tuple[str, str]], seed: int = 42) -> list[tuple[str, str]]:
    """One (image, caption) pair per image, the caption drawn with a seeded generator, images in sorted order.

    Args:
        pairs: ``(image name, caption)`` pairs, several captions per image allowed.
        seed: seed of the generator that picks each image's caption.
    """
    by_image: dict[str, list[str]] = {}
    for image, caption in pairs:
        by_image.setdefault(image, []).append(caption)
    generator = random.Random(seed)
    return [(image, generator.choice(captions)) for image, captions in sorted(by_image.items())]


def caption_feature_dataset(
    pairs: list[tuple[str, str]],
    names: list[str],
    features: torch.Tensor,
    one_caption_per_image: bool = True,
    seed: int = 42,
) -> Dataset:
    """Columns ``anchor`` and ``positive`` (the caption twice) and ``label`` (the image's features, (d,) or (regions,
    d), stored with their shape and read as tensors), for MultimodalAlignLoss; one caption per image (seeded), as
    MCSE.

    Args:
        pairs: ``(image name, caption)`` pairs.
        names: the image names, one per row of ``features``.
        features: image features, (images, d) global vectors or (images, regions, d) region grids.
        one_caption_per_image: keep one seeded caption per image (MCSE); False keeps every pair.
        seed: seed of the caption choice.
    """
    if features.ndim not in (2, 3):
        raise ValueError(
            f"Image features must be (images, d) or (images, regions, d), got shape {tuple(features.shape)}."
        )
    if features.shape[0] != len(names):
        raise ValueError(f"{len(names)} image names but {features.shape[0]} feature rows; they must match.")
    row_of = {name: row for row, name in enumerate(names)}
    missing = sorted({image for image, _ in pairs if image not in row_of})
    if missing:
        raise ValueError(
            f"No features for {len(missing)} image(s), e.g. {missing[:3]}; extract features for every captioned image."
        )
    if one_caption_per_image:
        pairs = sample_one_caption_per_image(pairs, seed)
    captions = [caption for _, caption in pairs]
    labels = features[[row_of[image] for image, _ in pairs]].float()
    label_type = (
        Array2D(shape=tuple(labels.shape[1:]), dtype="float32")
        if labels.ndim == 3
        else List(Value("float32"), length=labels.shape[1])
    )
    columns = Features({"anchor": Value("string"), "positive": Value("string"), "label": label_type})
    dataset = Dataset.from_dict({"anchor": captions, "positive": captions, "label": labels.numpy()}, features=columns)
    return dataset.with_format("torch")  # captions stay strings; every column in place (the losses read them in order)


def caption_clip_dataset(
    pairs: list[tuple[str, str]], names: list[str], captions: list[str], features: dict[str, torch.Tensor]
) -> Dataset:
    """Columns ``anchor`` and ``positive`` (the caption twice) and ``label``, the (2, d) CLIP embeddings of the
    caption's image and of the caption, for :class:`~sbert_nonling.losses.TeacherGuidedAlignLoss` (KDMCSE) and
    DALR's loss; one row per caption, as KDMCSE trains. A ValueError names an image or caption without embeddings.

    Args:
        pairs: ``(image name, caption)`` pairs.
        names: the image names, one per row of ``features["global"]``.
        captions: the captions, one per row of ``features["captions"]``.
        features: CLIP's image (``"global"``) and caption (``"captions"``) embeddings
            (:func:`~sbert_nonling.data.clip_features.load_clip_features`).
    """
    image_row = {name: row for row, name in enumerate(names)}
    caption_row = {caption: row for row, caption in enumerate(captions)}
    missing_images = sorted({image for image, _ in pairs if image not in image_row})
    missing_captions = sorted({caption for _, caption in pairs if caption not in caption_row})
    if missing_images or missing_captions:
        raise ValueError(
            f"The CLIP features do not match the captions: {len(missing_images)} image(s) and "
            f"{len(missing_captions)} caption(s) have no embedding, e.g. {(missing_images + missing_captions)[:2]}; "
            "compute them from this captions file (sbert-nonling features --captions FILE)."
        )
    images = features["global"][[image_row[image] for image, _ in pairs]]
    texts = features["captions"][[caption_row[caption] for _, caption in pairs]]
    labels = torch.stack([images, texts], dim=1).float()  # (pairs, 2, d)
    columns = Features(
        {
            "anchor": Value("string"),
            "positive": Value("string"),
            "label": Array2D(shape=tuple(labels.shape[1:]), dtype="float32"),
        }
    )
    rows = [caption for _, caption in pairs]
    dataset = Dataset.from_dict({"anchor": rows, "positive": rows, "label": labels.numpy()}, features=columns)
    return dataset.with_format("torch")
