"""Unpaired audio data for AudioCSE: folders of wav / flac files read with soundfile, labels from the file name."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import soundfile
from datasets import Audio as AudioFeature
from datasets import Dataset

from sbert_nonling.data.decoding import MAX_SECONDS, MIN_SAMPLES, SAMPLE_RATE, read_file_value
from sbert_nonling.data.hub import AUDIO_ROLES, class_indices, first_rows_per_class, hub_source, load_hub_columns
from sbert_nonling.data.images import VIEW_COLUMNS

logger = logging.getLogger(__name__)

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg")


def read_audio(path: str | Path | io.BytesIO, name: str | None = None) -> dict[str, Any]:
    """``{"array": float32 (samples[, channels]), "sampling_rate": Hz}`` of a file, or a ValueError naming it
    (``name``): undecodable, shorter than one 25 ms fbank window, longer than ``MAX_SECONDS``, or holding NaN /
    infinite samples.

    Args:
        path: a file path or an in-memory file (``io.BytesIO``).
        name: how error messages name the file (default: ``path``).
    """
    name = name or str(path)
    source = path if isinstance(path, io.BytesIO) else str(path)
    try:
        info = soundfile.info(source)
        seconds = info.frames / info.samplerate
        if seconds * SAMPLE_RATE < MIN_SAMPLES:
            raise ValueError(
                f"Audio {name!r} holds {info.frames} samples at {info.samplerate} Hz ({seconds:.4f} s); at least 25 "
                "ms (one fbank window) are needed."
            )
        if seconds > MAX_SECONDS:
            raise ValueError(f"Audio {name!r} is {seconds:.0f} s long; at most {MAX_SECONDS} s is accepted.")
        if isinstance(source, io.BytesIO):
            source.seek(0)
        array, sampling_rate = soundfile.read(source, dtype="float32", always_2d=False)
    except (soundfile.LibsndfileError, RuntimeError, OSError) as error:
        raise ValueError(f"Cannot decode audio {name!r}: {error}") from None
    if not np.isfinite(array).all():
        raise ValueError(f"Audio {name!r} contains NaN or infinite samples.")
    return {"array": np.asarray(array), "sampling_rate": int(sampling_rate)}


def label_from_regex(pattern: str) -> Callable[[str], str]:
    """A labeller taking the first group of ``pattern`` matched against the file name, e.g. FSDD's speaker:
    ``label_from_regex(r"^\\d+_([a-z]+)_\\d+")`` on ``0_george_12.wav`` gives ``"george"``.

    Args:
        pattern: a regular expression with at least one group, searched in the file name.
    """
    compiled = re.compile(pattern)
    if compiled.groups < 1:
        raise ValueError(f"Label pattern {pattern!r} needs a capture group, e.g. r'^\\d+_([a-z]+)_'.")

    def label(file_name: str) -> str:
        match = compiled.search(file_name)
        if match is None:
            raise ValueError(f"File name {file_name!r} does not match the label pattern {pattern!r}.")
        return match.group(1)

    return label


def audio_folder_dataset(
    folder: str | Path,
    label_fn: Callable[[str], Any] | None = None,
    limit: int | None = None,
    limit_per_class: int | None = None,
) -> tuple[Dataset, list[str]]:
    """Audio files of ``folder`` (or a Hub audio dataset) as an AudioCSE dataset, and the class names:
    ``view_1`` and ``view_2`` hold the same clip (decoded when read), ``label`` the index of ``label_fn(file name)``
    (or the Hub label column). ``limit_per_class`` keeps the first clips of every class, then ``limit`` the first rows.

    Args:
        folder: a folder of ``.wav`` / ``.flac`` / ``.ogg`` files, or a Hub dataset
            ``owner/name?audio=COLUMN&label=COLUMN``.
        label_fn: file name -> class (e.g. :func:`label_from_regex`); required for a folder, unused for a Hub
            dataset (its label column).
        limit: keep at most this many rows (after ``limit_per_class``); None keeps all.
        limit_per_class: keep at most this many clips of every class; None keeps all.
    """
    source = hub_source(folder, AUDIO_ROLES)
    if source is not None:
        dataset = load_hub_columns(source, AUDIO_ROLES)
        if limit_per_class is not None:
            dataset = dataset.select(first_rows_per_class(dataset["label"], limit_per_class))
        dataset = dataset.select(range(min(limit, len(dataset)))) if limit is not None else dataset
        if isinstance(dataset.features["audio"], AudioFeature):  # decoded here with soundfile, not by datasets
            dataset = dataset.cast_column("audio", AudioFeature(decode=False))
        dataset, classes = class_indices(dataset)
    else:
        if label_fn is None:
            raise ValueError(
                f"Audio folder {str(folder)!r}: pass label_fn (e.g. label_from_regex(r'^(\\d+)-')) to label its files."
            )
        if not Path(folder).is_dir():
            raise ValueError(f"Audio folder {str(folder)!r} does not exist.")
        files = sorted(path for path in Path(folder).iterdir() if path.suffix.lower() in AUDIO_EXTENSIONS)
        if not files:
            raise ValueError(f"No audio files ({', '.join(AUDIO_EXTENSIONS)}) in {str(folder)!r}.")
        names = [label_fn(path.name) for path in files]
        rows = first_rows_per_class(names, limit_per_class) if limit_per_class is not None else range(len(files))
        files, names = [files[row] for row in rows][:limit], [names[row] for row in rows][:limit]
        classes = sorted(set(names))
        dataset = Dataset.from_dict(
            {"audio": [str(path) for path in files], "label": [classes.index(name) for name in names]}
        )
    dataset.set_transform(_two_view_clips)
    logger.info(f"{source or folder}: {len(dataset)} clips in {len(classes)} classes")
    return dataset, classes


def _two_view_clips(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    clips = [read_file_value(item, read_audio, "audio") for item in batch["audio"]]
    return {VIEW_COLUMNS[0]: clips, VIEW_COLUMNS[1]: clips, "label": batch["label"]}
