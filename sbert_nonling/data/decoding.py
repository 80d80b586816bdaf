"""Checked decoding of raw media: any image to RGB PIL, any waveform to mono 16 kHz, a ValueError naming a bad item."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
import torchaudio
from PIL import Image

T = TypeVar("T")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Largest image accepted (8192 x 8192 pixels, 256 MiB as RGBA), checked before a lazily opened file is decoded.
MAX_IMAGE_PIXELS = 8192 * 8192


def to_rgb_image(image: Any, where: str) -> Image.Image:
    """Any PIL mode or uint8/uint16/float array (H, W[, C]) -> RGB PIL image (transparency on white, 16/32-bit scaled
    by their maximum); a lazily opened file that cannot be decoded raises a ValueError naming ``where`` and the
    file.

    Args:
        image: a PIL image (any mode) or an array (H, W) / (H, W, C) of uint8, uint16 or float values.
        where: how error messages name the image, e.g. ``"image 3"`` or a file path.
    """
    if isinstance(image, np.ndarray):
        image = _array_to_image(image, where)
    if not isinstance(image, Image.Image):
        raise ValueError(f"{where} is a {type(image).__name__}; expected a PIL image or an (H, W[, C]) array.")
    check_image_size(image, where)
    try:
        image.load()  # a no-op for an image in memory
    except (OSError, SyntaxError, ValueError) as error:  # PIL's decoders: truncated data, bad tables, a closed file
        filename = getattr(image, "filename", "")  # only a file-backed image (PIL.ImageFile) has one
        source = f" {filename!r}" if filename else ""
        raise ValueError(f"{where}: Cannot decode image{source}: {error}") from None
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        values = np.asarray(image, dtype=np.float64)
        scale = 65535.0 if image.mode.startswith("I;16") or values.max(initial=0) > 255 else 255.0
        image = Image.fromarray(np.clip(values / scale * 255.0, 0, 255).astype(np.uint8), mode="L")
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def check_image_size(image: Image.Image, where: str) -> None:
    """Raise a ValueError naming ``where`` unless the image has 1 to :data:`MAX_IMAGE_PIXELS` pixels (size only: no
    decoding).

    Args:
        image: a PIL image, opened lazily (its size is read from the header).
        where: how the error message names the image.
    """
    if image.width < 1 or image.height < 1:
        raise ValueError(f"{where} has size {image.size}; an image needs at least 1x1 pixels.")
    if image.width * image.height > MAX_IMAGE_PIXELS:
        raise ValueError(
            f"{where} has {image.width}x{image.height} = {image.width * image.height} pixels, more than "
            f"MAX_IMAGE_PIXELS={MAX_IMAGE_PIXELS} (8192x8192); resize it before encoding."
        )


def read_file_value(item: Any, read: Callable[..., T], kind: str) -> T:
    """``read`` of a column value naming a file: a path, or a Hub dataset's undecoded ``{"bytes", "path"}``.

    Args:
        item: the column value: a path (``str`` / ``Path``) or a ``{"bytes": ..., "path": ...}`` dict.
        read: the reader called with a path or an ``io.BytesIO`` and a name for its messages.
        kind: what the value holds (``"image"``, ``"audio"``), for the ValueError of an unreadable value.
    """
    if isinstance(item, dict) and item.get("bytes") is not None:
        return read(io.BytesIO(item["bytes"]), name=item.get("path") or f"embedded {kind} bytes")
    if isinstance(item, dict) and item.get("path"):
        return read(item["path"])
    if isinstance(item, (str, Path)):
        return read(item)
    raise ValueError(f"{kind.capitalize()} value {str(item)[:80]!r} has neither bytes nor a path.")


def _array_to_image(array: np.ndarray, where: str) -> Image.Image:
    if array.ndim == 3 and array.shape[0] in (1, 3, 4) and array.shape[-1] not in (1, 3, 4):
        array = np.moveaxis(array, 0, -1)  # (C, H, W) -> (H, W, C)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[-1] not in (3, 4)):
        raise ValueError(f"{where} is an array of shape {array.shape}; expected (H, W), (H, W, 3/4) or (3/4, H, W).")
    if not np.isfinite(array).all():
        raise ValueError(f"{where} contains NaN or infinite values.")
    if np.issubdtype(array.dtype, np.floating):
        array = np.clip(array * 255.0 if array.max(initial=0) <= 1.0 else array, 0, 255).astype(np.uint8)
    elif array.dtype == np.uint16:
        array = (array / 257).astype(np.uint8)
    elif array.dtype != np.uint8:
        array = np.clip(array, 0, 255).astype(np.uint8)
    return Image.fromarray(array)


SAMPLE_RATE = 16000
#: One fbank window (25 ms at 16 kHz): shorter waveforms are rejected.
MIN_SAMPLES = 400
#: Longest waveform accepted (seconds at the input rate); longer ones are rejected rather than silently decoded.
MAX_SECONDS = 600


def waveform_to_mono_16k(audio: Any, where: str) -> torch.Tensor:
    """A waveform (samples[, channels] either way round, or ``{"array", "sampling_rate"}``) -> float32 mono 16 kHz
    tensor.

    Args:
        audio: an array or tensor of samples, or a ``{"array", "sampling_rate"}`` dict (other rates are resampled).
        where: how error messages name the audio, e.g. ``"audio 0"``.
    """
    sampling_rate = SAMPLE_RATE
    if isinstance(audio, dict):
        if "array" not in audio or "sampling_rate" not in audio:
            raise ValueError(f"{where} is a dict with keys {sorted(audio)}; expected 'array' and 'sampling_rate'.")
        audio, sampling_rate = audio["array"], audio["sampling_rate"]
        if not isinstance(sampling_rate, (int, np.integer)) or sampling_rate <= 0:
            raise ValueError(f"{where} has sampling_rate={sampling_rate!r}; expected a positive integer (Hz).")
    array = audio.detach().cpu().numpy() if isinstance(audio, torch.Tensor) else np.asarray(audio)
    if array.ndim not in (1, 2) or array.size == 0:
        raise ValueError(f"{where} has shape {array.shape}; expected a non-empty 1-D or 2-D waveform.")
    if max(array.shape) > MAX_SECONDS * int(sampling_rate):  # before any copy: the longer axis holds the samples
        raise ValueError(
            f"{where} is {max(array.shape) / sampling_rate:.0f} s long; at most {MAX_SECONDS} s is accepted."
        )
    if np.issubdtype(array.dtype, np.integer):
        array = array.astype(np.float64) / float(np.iinfo(array.dtype).max + 1)
    elif not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"{where} has dtype {array.dtype}; expected integer PCM or floating-point samples.")
    if not np.isfinite(array).all():
        raise ValueError(f"{where} contains NaN or infinite samples.")
    if array.ndim == 2:
        array = array.mean(axis=int(np.argmin(array.shape)))  # the shorter axis holds the channels
    waveform = torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))
    if sampling_rate != SAMPLE_RATE:
        waveform = torchaudio.functional.resample(waveform, int(sampling_rate), SAMPLE_RATE)
    if waveform.shape[0] < MIN_SAMPLES:
        raise ValueError(
            f"{where} has {waveform.shape[0]} samples at 16 kHz; at least {MIN_SAMPLES} (one 25 ms fbank window) are "
            "needed."
        )
    return waveform
