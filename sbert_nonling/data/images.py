"""Unpaired image data for VisualCSE: class folders, HF datasets or (image, label) pairs, served as two augmented views."""

from __future__ import annotations

import contextlib
import functools
import io
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset, Features, Value
from datasets import Image as ImageFeature
from PIL import Image, UnidentifiedImageError
from torchvision.transforms import v2

from sbert_nonling.data.decoding import check_image_size, read_file_value, to_rgb_image
from sbert_nonling.data.hub import IMAGE_ROLES, class_indices, first_rows_per_class, hub_source, load_hub_columns

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")
#: Columns of a two-view dataset: what UnpairedModalityContrastiveLoss reads.
VIEW_COLUMNS = ("view_1", "view_2")
#: Column a two-view dataset adds to name the source row of an image that fails to decode.
ROW_COLUMN = "__row__"


def two_view_transform(img_size: int = 224) -> v2.Compose:
    """SimCLR / SupCon augmentation as in VisualCSE, PIL in, PIL out (ImagePatchEmbed normalises)."""
    return v2.Compose(
        [
            v2.RandomResizedCrop(img_size, scale=(0.2, 1.0), antialias=True),
            v2.RandomHorizontalFlip(),
            v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
            v2.RandomGrayscale(p=0.2),
        ]
    )


def open_image(path: str | Path | io.BytesIO, name: str | None = None) -> Image.Image:
    """Decode an image file (or file object) fully as RGB, or raise a ValueError naming it (``name``, default the path):
    zero-byte, truncated, not an image, or larger than ``MAX_IMAGE_PIXELS`` (checked before decoding)."""
    name = name or str(path)
    try:
        with Image.open(path) as image:
            check_image_size(image, f"Image {name!r}")
            image.load()
            return to_rgb_image(image, name)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError) as error:
        reason = "not a known image format" if isinstance(error, UnidentifiedImageError) else str(error)
        raise ValueError(f"Cannot decode image {name!r}: {reason}") from None


def decode_image(item: Any, row: int) -> Image.Image:
    """One image-column value (a path, undecoded Hub bytes or a PIL image) as RGB; a ValueError names the row and file."""
    try:
        return (
            read_file_value(item, open_image, "image")
            if isinstance(item, (str, Path, dict))
            else to_rgb_image(item, "image")
        )
    except ValueError as error:
        raise ValueError(f"Image dataset row {row}: {error}") from None


class SeededRow(int):
    """A row index carrying the draw (sampler pass) it is read for, which seeds its views in any DataLoader worker."""

    draw: int

    def __new__(cls, index: int, draw: int) -> SeededRow:
        row = super().__new__(cls, index)
        row.draw = draw
        return row

    def __sub__(self, other: int) -> SeededRow:
        return SeededRow(int(self) - other, self.draw)

    def __reduce__(self):
        return SeededRow, (int(self), self.draw)

    def __repr__(self) -> str:
        return f"SeededRow({int(self)}, draw={self.draw})"


class TwoViewTransform:
    """The ``set_transform`` of two-view datasets: decode each item, then draw two SimCLR augmentations of it, seeded by
    ``(seed, row, draw)`` inside :meth:`seeded` (the global RNG untouched), else from the global torch RNG."""

    def __init__(self, image_column: str, label_column: str | None, img_size: int, seed: int = 0) -> None:
        self.image_column = image_column
        self.label_column = label_column
        self.augment = two_view_transform(img_size)
        self.seed = seed
        self.draw: int | None = None

    @contextlib.contextmanager
    def seeded(self, draw: int) -> Iterator[None]:
        self.draw = draw
        try:
            yield
        finally:
            self.draw = None

    def _views(self, image: Image.Image, row: int) -> tuple[Image.Image, Image.Image]:
        if self.draw is None:
            return self.augment(image), self.augment(image)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed((self.seed * 1_000_003 + row) * 1_000_033 + self.draw)
            return self.augment(image), self.augment(image)

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        pairs = [
            self._views(decode_image(item, row), row) for item, row in zip(batch[self.image_column], batch[ROW_COLUMN])
        ]
        views: dict[str, list[Any]] = {
            VIEW_COLUMNS[0]: [pair[0] for pair in pairs],
            VIEW_COLUMNS[1]: [pair[1] for pair in pairs],
        }
        if self.label_column is not None:
            views["label"] = batch[self.label_column]
        return views


def two_view_transform_of(dataset: Any) -> TwoViewTransform | None:
    """The :class:`TwoViewTransform` serving ``dataset``, also inside a ``functools.partial``, or None."""
    transform = (getattr(dataset, "format", None) or {}).get("format_kwargs", {}).get("transform")
    while isinstance(transform, functools.partial) and not isinstance(transform, TwoViewTransform):
        transform = transform.keywords.get("transform", transform.func)
    return transform if isinstance(transform, TwoViewTransform) else None


class TwoViewDataset(Dataset):
    """A ``datasets.Dataset`` served through a :class:`TwoViewTransform`; a row read by a :class:`SeededRow` gets its draw."""

    def __getitem__(self, key):
        views = two_view_transform_of(self) if isinstance(key, SeededRow) else None
        if views is None:
            return super().__getitem__(key)
        with views.seeded(key.draw):
            return super().__getitem__(int(key))


def two_view_image_dataset(
    dataset: Dataset, image_column: str = "image", label_column: str | None = "label", img_size: int = 224
) -> Dataset:
    """Serve ``dataset`` (images or image paths, optional integer labels) as a :class:`TwoViewDataset` with columns
    ``view_1``, ``view_2`` (two augmentations) and ``label``, decoding each image when its item is read."""
    columns = [column for column in (image_column, label_column) if column is not None]
    missing = [column for column in columns if column not in dataset.column_names]
    if missing:
        raise ValueError(f"The image dataset has no column(s) {missing}; columns: {dataset.column_names}.")
    dataset = dataset.select_columns(columns)
    if isinstance(dataset.features[image_column], ImageFeature) and dataset.features[image_column].decode:
        dataset = dataset.cast_column(image_column, ImageFeature(decode=False))
    dataset = dataset.add_column(ROW_COLUMN, list(range(len(dataset)))).flatten_indices()
    dataset = TwoViewDataset(dataset.data, info=dataset.info, split=dataset.split)
    dataset.set_transform(TwoViewTransform(image_column, label_column, img_size))
    return dataset


def image_folder_dataset(
    folder: str | Path, img_size: int = 224, limit_per_class: int | None = None
) -> tuple[Dataset, list[str]]:
    """Images in class sub-folders (``folder/<class>/*.jpg``) or a Hub image dataset (``"frgfm/imagenette?config=320px"``,
    docs/data.md) as a two-view dataset, and the class names; ``limit_per_class`` keeps the first images of each class."""
    source = hub_source(folder, IMAGE_ROLES)
    if source is not None:
        dataset, classes = class_indices(load_hub_columns(source, IMAGE_ROLES))
        if limit_per_class is not None:
            dataset = dataset.select(first_rows_per_class(dataset["label"], limit_per_class))
    else:
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"Image folder {str(folder)!r} does not exist.")
        classes = sorted(entry.name for entry in folder.iterdir() if entry.is_dir())
        files = [
            sorted(path for path in (folder / name).iterdir() if path.suffix.lower() in IMAGE_EXTENSIONS)[
                :limit_per_class
            ]
            for name in classes
        ]
        if not any(files):
            raise ValueError(f"No images ({', '.join(IMAGE_EXTENSIONS)}) in class sub-folders of {str(folder)!r}.")
        empty = [name for name, found in zip(classes, files) if not found]
        if empty:
            logger.warning(
                f"{folder}: class folder(s) {empty} hold no images ({', '.join(IMAGE_EXTENSIONS)}); they are left out."
            )
        if len(classes) - len(empty) < 2:
            logger.warning(
                f"{folder}: all images are in one class folder; a supervised contrastive loss (supcon) then treats every "
                "image as a positive of every other. Put the images in one sub-folder per class, or use the setting "
                "modality_loss.mode=simclr (--set modality_loss.mode=simclr)."
            )
        paths = [str(path) for found in files for path in found]
        dataset = Dataset.from_dict(
            {"image": paths, "label": [label for label, found in enumerate(files) for _ in found]}
        )
    logger.info(f"{source or folder}: {len(dataset)} images in {len(classes)} classes")
    return two_view_image_dataset(dataset, img_size=img_size), classes


def image_pairs_dataset(pairs: Iterable[tuple[Any, int]], img_size: int = 224) -> Dataset:
    """Any iterable of (PIL image or array, integer label) as a two-view dataset."""
    images, labels = [], []
    for index, (image, label) in enumerate(pairs):
        images.append(to_rgb_image(image, f"image {index}"))
        labels.append(int(label))
    if not images:
        raise ValueError("image_pairs_dataset got no (image, label) pairs.")
    dataset = Dataset.from_dict(
        {"image": images, "label": labels}, features=Features({"image": ImageFeature(), "label": Value("int64")})
    )
    return two_view_image_dataset(dataset, img_size=img_size)
