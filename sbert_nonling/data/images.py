"""Unpaired image data for VisualCSE: class folders, HF datasets or (image, label) pairs, served as two augmented
views."""

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


def two_view_transform(image_size: int = 224) -> v2.Compose:
    """SimCLR / SupCon augmentation as in VisualCSE, PIL in, PIL out (ImagePatchEmbed normalises): a random resized
    crop (20-100 % of the area) to ``image_size``, a horizontal flip, colour jitter (p 0.8) and grayscale (p 0.2).

    Args:
        image_size: the side of the square output in pixels.
    """
    return v2.Compose(
        [
            v2.RandomResizedCrop(image_size, scale=(0.2, 1.0), antialias=True),
            v2.RandomHorizontalFlip(),
            v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
            v2.RandomGrayscale(p=0.2),
        ]
    )


def open_image(path: str | Path | io.BytesIO, name: str | None = None) -> Image.Image:
    """Decode an image file (or file object) fully as RGB, or raise a ValueError naming it: zero-byte, truncated, not
    an image, or larger than ``MAX_IMAGE_PIXELS`` (checked before decoding).

    Args:
        path: the file, or a file object.
        name: how the error names the image (default: the path).
    """
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
    """One image-column value (a path, undecoded Hub bytes or a PIL image) as RGB; a ValueError names the row and
    file.

    Args:
        item: the column's value.
        row: the row it comes from, for the error.
    """
    try:
        return (
            read_file_value(item, open_image, "image")
            if isinstance(item, (str, Path, dict))
            else to_rgb_image(item, "image")
        )
    except ValueError as error:
        raise ValueError(f"Image dataset row {row}: {error}") from None


class SeededRow(int):
    """A row index that carries the draw (the sampler's pass over the dataset) it is read for; a
    :class:`TwoViewDataset` seeds the row's two views by ``(seed, row, draw)``.

    Why an index: the views must be the same whichever process reads the row (the main process, or any of N
    DataLoader workers) and after a resume, where the trainer skips the batches already trained without reading them
    and restores the RNG states only after the first batch is drawn. The global or a worker's RNG depends on what that
    process read before, a ``worker_init_fn`` runs once per worker rather than once per row, and a column is the same
    in every pass; only the index goes from the sampler to the process that reads the row, so the pass travels with
    it. It is an ``int`` so that ``ConcatDataset`` can place it (subtracting a dataset's offset keeps the draw) and
    pickles into workers.

    Args:
        index: the row's index (in the concatenated datasets when the sampler yields it).
        draw: the pass the row is read for (:class:`~sbert_nonling.training.unpaired_sampler.UnpairedBatchSampler`:
            ``epoch * 1_000_000 + pass``).

    Example:
        ::

            import os
            from sbert_nonling.data.images import SeededRow, image_folder_dataset

            folder = os.environ["SBERT_NONLING_SHARED"] + "/data/images/cifar10/train"
            dataset, classes = image_folder_dataset(folder, image_size=32, limit_per_class=1)
            first = dataset[SeededRow(0, draw=3)]["view_1"]
            again = dataset[SeededRow(0, draw=3)]["view_1"]  # the same view, in any process
            other = dataset[SeededRow(0, draw=4)]["view_1"]  # the next pass: another view
            print(list(first.getdata()) == list(again.getdata()), list(first.getdata()) == list(other.getdata()))
    """

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
    """The ``set_transform`` of two-view datasets: decode each item, then draw two SimCLR augmentations of it
    (:func:`two_view_transform`). Inside :meth:`seeded` they are drawn in a fork of torch's CPU generator seeded by
    ``(seed, row, draw)``, every global torch generator (CPU and accelerators) untouched; otherwise from the global
    CPU generator.

    Args:
        image_column: the column of images (PIL images, paths or undecoded Hub bytes).
        label_column: the column of integer class labels, or None (no ``label`` column).
        image_size: the side of the square views.
        seed: mixed into every seeded draw.
    """

    def __init__(self, image_column: str, label_column: str | None, image_size: int, seed: int = 0) -> None:
        self.image_column = image_column
        self.label_column = label_column
        self.augment = two_view_transform(image_size)
        self.seed = seed
        self.draw: int | None = None

    @contextlib.contextmanager
    def seeded(self, draw: int) -> Iterator[None]:
        """Seed the views of the rows read inside this block by ``draw`` (the sampler's pass).

        Args:
            draw: the sampler's pass over the data.
        """
        self.draw = draw
        try:
            yield
        finally:
            self.draw = None

    def _views(self, image: Image.Image, row: int) -> tuple[Image.Image, Image.Image]:
        if self.draw is None:
            return self.augment(image), self.augment(image)
        with torch.random.fork_rng(devices=[]):
            # The CPU generator alone (what the augmentations draw from and fork_rng restores): torch.manual_seed
            # would also seed the accelerators' generators, which fork_rng(devices=[]) does not restore, and where
            # their runtime is not initialised (DataLoader workers) it formats the Python stack every call.
            torch.default_generator.manual_seed((self.seed * 1_000_003 + row) * 1_000_033 + self.draw)
            return self.augment(image), self.augment(image)

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        rows = zip(batch[self.image_column], batch[ROW_COLUMN])
        pairs = [self._views(decode_image(item, row), row) for item, row in rows]
        views: dict[str, list[Any]] = {
            VIEW_COLUMNS[0]: [pair[0] for pair in pairs],
            VIEW_COLUMNS[1]: [pair[1] for pair in pairs],
        }
        if self.label_column is not None:
            views["label"] = batch[self.label_column]
        return views


def two_view_transform_of(dataset: Any) -> TwoViewTransform | None:
    """The :class:`TwoViewTransform` serving ``dataset``, also inside a ``functools.partial``, or None.

    Args:
        dataset: any dataset (one without a ``set_transform`` transform gives None).
    """
    transform = (getattr(dataset, "format", None) or {}).get("format_kwargs", {}).get("transform")
    while isinstance(transform, functools.partial) and not isinstance(transform, TwoViewTransform):
        transform = transform.keywords.get("transform", transform.func)
    return transform if isinstance(transform, TwoViewTransform) else None


class TwoViewDataset(Dataset):
    """A ``datasets.Dataset`` served through a :class:`TwoViewTransform` (:func:`two_view_image_dataset` builds it).

    Read with a :class:`SeededRow`, the row's views are seeded by its draw, so the same ``(row, draw)`` gives the same
    views in any process; read with a plain ``int``, slice or column name, it is an ordinary ``Dataset`` whose views
    come from the global torch RNG.
    """

    def __getitem__(self, key):
        views = two_view_transform_of(self) if isinstance(key, SeededRow) else None
        if views is None:
            return super().__getitem__(key)
        with views.seeded(key.draw):
            return super().__getitem__(int(key))


def two_view_image_dataset(
    dataset: Dataset, image_column: str = "image", label_column: str | None = "label", image_size: int = 224
) -> Dataset:
    """Serve ``dataset`` (images or image paths, optional integer labels) as a :class:`TwoViewDataset` with columns
    ``view_1``, ``view_2`` (two augmentations, :func:`two_view_transform`) and ``label``, decoding each image when its
    item is read.

    Args:
        dataset: the rows, with an image column (PIL images, paths or Hub image bytes) and optionally labels.
        image_column: the column of images.
        label_column: the column of integer class labels; None: no labels (SimCLR).
        image_size: the side of the square views in pixels.

    Example:
        ::

            from datasets import Dataset
            from PIL import Image
            from sbert_nonling.data.images import two_view_image_dataset

            images = [Image.new("RGB", (40, 30), "red"), Image.new("RGB", (30, 40), "blue")]
            views = two_view_image_dataset(Dataset.from_dict({"image": images, "label": [0, 1]}), image_size=16)
            row = views[0]  # {"view_1": 16 x 16 PIL image, "view_2": another crop, "label": 0}
    """
    columns = [column for column in (image_column, label_column) if column is not None]
    missing = [column for column in columns if column not in dataset.column_names]
    if missing:
        raise ValueError(f"The image dataset has no column(s) {missing}; columns: {dataset.column_names}.")
    dataset = dataset.select_columns(columns)
    if isinstance(dataset.features[image_column], ImageFeature) and dataset.features[image_column].decode:
        dataset = dataset.cast_column(image_column, ImageFeature(decode=False))
    dataset = dataset.add_column(ROW_COLUMN, list(range(len(dataset)))).flatten_indices()
    dataset = TwoViewDataset(dataset.data, info=dataset.info, split=dataset.split)
    dataset.set_transform(TwoViewTransform(image_column, label_column, image_size))
    return dataset


def image_folder_dataset(
    folder: str | Path, image_size: int = 224, limit_per_class: int | None = None
) -> tuple[Dataset, list[str]]:
    """Images in class sub-folders (``folder/<class>/*.jpg``), or a Hub image dataset, as a two-view dataset
    (:func:`two_view_image_dataset`), and the class names (label ``i`` is ``classes[i]``).

    Args:
        folder: a folder with one sub-folder of images per class, or a Hub dataset as ``owner/name?key=value&...``
            (``config``, ``split``, and the ``image`` / ``label`` columns, e.g. ``"uoft-cs/cifar10?image=img"``).
        image_size: the side of the square views in pixels.
        limit_per_class: keep the first images of each class (sorted file names); None keeps all.
    """
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
                f"{folder}: all images are in one class folder; a supervised contrastive loss (supcon) then treats "
                "every image as a positive of every other. Put the images in one sub-folder per class, or use the "
                "setting modality_loss.mode=simclr (--set modality_loss.mode=simclr)."
            )
        paths = [str(path) for found in files for path in found]
        dataset = Dataset.from_dict(
            {"image": paths, "label": [label for label, found in enumerate(files) for _ in found]}
        )
    logger.info(f"{source or folder}: {len(dataset)} images in {len(classes)} classes")
    return two_view_image_dataset(dataset, image_size=image_size), classes


def image_pairs_dataset(pairs: Iterable[tuple[Any, int]], image_size: int = 224) -> Dataset:
    """Any iterable of (PIL image or array, integer label) as a two-view dataset (:func:`two_view_image_dataset`).

    Args:
        pairs: (image, label) pairs; the images are converted to RGB at once.
        image_size: the side of the square views in pixels.
    """
    images, labels = [], []
    for index, (image, label) in enumerate(pairs):
        images.append(to_rgb_image(image, f"image {index}"))
        labels.append(int(label))
    if not images:
        raise ValueError("image_pairs_dataset got no (image, label) pairs.")
    dataset = Dataset.from_dict(
        {"image": images, "label": labels}, features=Features({"image": ImageFeature(), "label": Value("int64")})
    )
    return two_view_image_dataset(dataset, image_size=image_size)
