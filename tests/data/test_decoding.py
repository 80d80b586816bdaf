"""Decoding of raw media: any image to RGB, any waveform to mono 16 kHz, bad items named by the caller's label."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from sbert_nonling.data.decoding import MIN_SAMPLES, SAMPLE_RATE, check_image_size, to_rgb_image, waveform_to_mono_16k


def test_images_of_every_mode_and_layout_become_rgb():
    transparent = Image.new("RGBA", (2, 2), (255, 0, 0, 0))
    assert to_rgb_image(transparent, "image 0").getpixel((0, 0)) == (255, 255, 255)  # composited on white
    deep = Image.fromarray(np.full((2, 2), 65535, dtype=np.uint16))
    assert to_rgb_image(deep, "image 0").getpixel((0, 0)) == (255, 255, 255)  # 16 bits scaled by their maximum
    channels_first = np.zeros((3, 4, 5), dtype=np.float32)
    assert to_rgb_image(channels_first, "image 0").size == (5, 4)  # (C, H, W) -> 5 x 4 pixels


def test_bad_images_are_named():
    with pytest.raises(ValueError, match=r"^image 3 is a str; expected a PIL image"):
        to_rgb_image("cat.png", "image 3")
    with pytest.raises(ValueError, match=r"^image 1 contains NaN"):
        to_rgb_image(np.full((2, 2), np.nan), "image 1")
    with pytest.raises(ValueError, match=r"^image 2 has size \(0, 3\)"):
        check_image_size(Image.new("RGB", (0, 3)), "image 2")


def test_waveforms_become_mono_16k_float():
    pcm = np.stack([np.full(800, 16384, dtype=np.int16), np.zeros(800, dtype=np.int16)])  # 2 channels, 8 kHz
    waveform = waveform_to_mono_16k({"array": pcm, "sampling_rate": 8000}, "audio 0")
    assert waveform.dtype == torch.float32 and waveform.shape == (1600,)  # resampled to 16 kHz
    assert waveform[800].item() == pytest.approx(0.25, abs=1e-3)  # int PCM scaled to [-1, 1], channels averaged
    assert waveform_to_mono_16k(np.zeros((SAMPLE_RATE, 2)), "audio 0").shape == (SAMPLE_RATE,)  # (samples, channels)


def test_bad_waveforms_are_named():
    with pytest.raises(ValueError, match=rf"^audio 4 has {MIN_SAMPLES - 1} samples at 16 kHz"):
        waveform_to_mono_16k(np.zeros(MIN_SAMPLES - 1), "audio 4")
    with pytest.raises(ValueError, match=r"^audio 0 is a dict with keys \['wave'\]"):
        waveform_to_mono_16k({"wave": np.zeros(800)}, "audio 0")
    with pytest.raises(ValueError, match=r"^audio 1 contains NaN"):
        waveform_to_mono_16k(np.full(800, np.nan), "audio 1")
