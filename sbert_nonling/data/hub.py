"""Training data from the Hugging Face Hub wherever a local data path is accepted.

A Hub dataset is named ``owner/name``, optionally followed by ``?key=value&...``: ``split`` (default ``train``),
``config``, ``data_files`` and ``revision`` go to ``datasets.load_dataset``, and ``ROLE=COLUMN`` names the column
that plays a role (``text``, ``image``, ``caption``, ``audio``, ``label``, ...) when it is not named as the role.
Further reading: docs/data.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

from datasets import ClassLabel, Dataset, load_dataset

from sbert_nonling.util.unreachable import error_summary

#: ``owner/name``, as the Hub spells dataset repositories.
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: Query keys every Hub source takes besides its column roles.
SOURCE_OPTIONS = ("split", "config", "data_files", "revision")

#: The column roles of each kind of training data (the default column name is the role's name).
SENTENCE_ROLES = ("text",)
NLI_ROLES = ("sent0", "sent1", "hard_neg")
IMAGE_ROLES = ("image", "label")
AUDIO_ROLES = ("audio", "label")
CAPTION_ROLES = ("image", "caption")
#: What a local path holds instead of a Hub dataset, by the roles read from it.
LOCAL_FORMS = {
    SENTENCE_ROLES: "a text file of one sentence per line",
    NLI_ROLES: "a CSV file with the columns sent0,sent1,hard_neg",
    IMAGE_ROLES: "a folder with one sub-folder of images per class",
    AUDIO_ROLES: "a folder of audio files whose names hold their class (--audio-label-regex)",
    CAPTION_ROLES: "a Flickr token file, CSV or JSONL of image,caption rows beside --image-dir",
}


@dataclass(frozen=True)
class HubSource:
    """A Hub dataset to read one kind of training data from, as :func:`hub_source` parses it.

    Args:
        name: the dataset repository, ``owner/name``.
        split, config, data_files, revision: passed to ``datasets.load_dataset``.
        columns: role -> column name, for columns not named as the role (``{"label": "speaker_id"}``; a struct
            field is ``column.field``).
    """

    name: str
    split: str = "train"
    config: str | None = None
    data_files: str | None = None
    revision: str | None = None
    columns: dict[str, str] = field(default_factory=dict)

    def column(self, role: str) -> str:
        """The dataset column that plays ``role`` (the role's own name unless the source renames it).

        Args:
            role: a role such as ``"text"``, ``"image"``, ``"caption"`` or ``"label"``.
        """
        return self.columns.get(role, role)

    def __str__(self) -> str:
        options = {
            "split": self.split,
            "config": self.config,
            "data_files": self.data_files,
            "revision": self.revision,
            **self.columns,
        }
        return f"{self.name}?" + "&".join(f"{key}={value}" for key, value in options.items() if value is not None)


def hub_source(value: str | Path, roles: Sequence[str]) -> HubSource | None:
    """The Hub dataset ``value`` names (``owner/name?split=...&ROLE=COLUMN``), or None when ``value``
    exists on disk or is not of that form; an unknown key is a ValueError listing the valid ones.

    Args:
        value: a local path or a Hub dataset name, as given on the command line.
        roles: the roles a ``ROLE=COLUMN`` key may name, the first being the main one.
    """
    if isinstance(value, Path) or Path(value).exists():
        return None
    name, _, query = value.partition("?")
    if not HUB_NAME.match(name):
        return None
    try:
        options = dict(parse_qsl(query, strict_parsing=True)) if query else {}
    except ValueError:
        raise ValueError(f"{value!r}: the options after '?' must read key=value&key=value.") from None
    valid = (*SOURCE_OPTIONS, *roles)
    unknown = [key for key in options if key not in valid]
    if unknown:
        raise ValueError(f"{value!r}: unknown option {unknown[0]!r}; valid options: {', '.join(valid)}.")
    return HubSource(
        name,
        **{key: options[key] for key in SOURCE_OPTIONS if key in options},
        columns={role: options[role] for role in roles if role in options},
    )


def load_hub_columns(source: HubSource, roles: Sequence[str]) -> Dataset:
    """``source`` loaded by ``datasets.load_dataset``, reduced to the columns playing ``roles``, renamed to the
    roles.

    Args:
        source: the Hub dataset (:func:`hub_source`).
        roles: the roles to keep, each renamed from its column.
    """
    try:
        dataset = load_dataset(
            source.name, source.config, split=source.split, data_files=source.data_files, revision=source.revision
        )
    except Exception as error:  # datasets raises many kinds (network, missing split / config, bad files)
        raise ValueError(
            f"{source.name!r} is not a local path, and loading it as a Hub dataset ({source}) failed: "
            f"{error_summary(error)} Offline, pass a local path instead: {LOCAL_FORMS[tuple(roles)]}."
        ) from error
    columns = {role: source.column(role) for role in roles}
    if any("." in column and column not in dataset.column_names for column in columns.values()):
        dataset = dataset.flatten()  # struct fields become "column.field" columns
    missing = [f"{column!r} ({role})" for role, column in columns.items() if column not in dataset.column_names]
    if missing:
        raise ValueError(
            f"The Hub dataset {str(source)!r} has no column {', '.join(missing)}; columns found: "
            f"{dataset.column_names}. Name the column that plays a role with ?{roles[0]}=COLUMN."
        )
    dataset = dataset.select_columns(list(columns.values()))
    return dataset.rename_columns({column: role for role, column in columns.items() if column != role})


def class_indices(dataset: Dataset, column: str = "label") -> tuple[Dataset, list[str]]:
    """``dataset`` with ``column`` as class indices and the class names (a ClassLabel's, else the sorted distinct
    values).

    Args:
        dataset: the dataset holding the labels.
        column: the label column.
    """
    feature = dataset.features[column]
    if isinstance(feature, ClassLabel):
        return dataset, list(feature.names)
    values = [str(value) for value in dataset[column]]
    classes = sorted(set(values))
    index = {name: position for position, name in enumerate(classes)}
    return dataset.remove_columns(column).add_column(column, [index[value] for value in values]), classes


def first_rows_per_class(labels: Sequence[Hashable], limit: int) -> list[int]:
    """The rows of the first ``limit`` items of every class, in dataset order.

    Args:
        labels: the class of every row, in dataset order.
        limit: how many rows of each class to keep.
    """
    counts: Counter[Hashable] = Counter()
    rows = []
    for row, label in enumerate(labels):
        if counts[label] < limit:
            counts[label] += 1
            rows.append(row)
    return rows
