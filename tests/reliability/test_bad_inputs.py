"""Bad input, everywhere it enters: one table of cases, each handled as documented or rejected by a ValueError
that names the offending item (input index, file path and line, dataset row, route or modality).

The behaviour each case pins is listed in docs/reliability.md ("Bad input").
"""

from __future__ import annotations

import io
import math
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
import torch
from datasets import Dataset, Features, Value
from datasets import Image as ImageFeature
from PIL import Image
from torch.utils.data import DataLoader

from sbert_nonling.data.audio import read_audio
from sbert_nonling.data.captions import read_captions
from sbert_nonling.data.decoding import MAX_IMAGE_PIXELS, MAX_SECONDS, waveform_to_mono_16k
from sbert_nonling.data.images import image_folder_dataset, open_image, two_view_image_dataset
from sbert_nonling.data.text import read_nli_triplets, read_sentences
from sbert_nonling.evaluation.sts_data import read_sick, read_sts_year, read_stsb_csv, read_stsb_multi
from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed

#: What a rejection must name: an input index, a dataset row, a file (path, optionally :line), a route or the
#: modalities.
NAMES_THE_ITEM = re.compile(
    r"input \d|image \d|audio \d|row \d|\\\.(txt|csv|jsonl|jpg|png|wav)|Route '|Modality '|modalities \\\("
)


def png_one_colour(path: Path, width: int, height: int, value: int = 255) -> Path:
    """A valid 8-bit grayscale PNG of one colour, compressed row by row: a 10,000 x 10,000 file takes ~100 kB on disk
    and never exists decoded in this process."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    compressor = zlib.compressobj(1)
    row = b"\x00" + bytes([value]) * width  # filter type 0, then the pixels
    idat = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


def peak_memory_growth(function: Callable[[], Any]) -> tuple[int, Any]:
    """(growth of this process's peak resident memory in bytes while ``function`` ran, its result or exception).
    Reads Linux's /proc/self/status (the project's machines and CI are Linux)."""
    status = Path("/proc/self/status")

    def resident(key: str) -> int:
        line = next(line for line in status.read_text().splitlines() if line.startswith(key))
        return int(line.split()[1]) * 1024

    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current resident size
    before = resident("VmRSS:")
    try:
        outcome = function()
    except ValueError as error:
        outcome = error
    return resident("VmHWM:") - before, outcome


class Models:
    """Models the cases feed, built on first use and shared by the module's cases."""

    def __init__(self, tiny_encoder_dir: str) -> None:
        self.tiny_encoder_dir = tiny_encoder_dir

    @cached_property
    def pixel(self):
        from sbert_nonling.models.pixel_model import build_pixel_model
        from sbert_nonling.modules.pixel_encoder import PixelEncoder

        encoder = PixelEncoder.from_config(
            max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
        )
        return build_pixel_model(encoder, max_patches=16)

    @cached_property
    def multimodal(self):
        """Text, image and audio routes into the tiny encoder (hidden size 32)."""
        from sbert_nonling.models import build_sentence_model

        front_ends = {
            "image": ImagePatchEmbed(img_size=32, patch_size=8, embedding_dimension=32),
            "audio": AudioPatchEmbed(embedding_dimension=32, target_frames=64),
        }
        return build_sentence_model(self.tiny_encoder_dir, front_ends=front_ends)


@pytest.fixture(scope="module")
def models(tiny_encoder_dir) -> Models:
    return Models(tiny_encoder_dir)


class Env:
    """What a case needs: the models, a folder to write files into, the shared data, and small front-ends."""

    def __init__(self, request: pytest.FixtureRequest, models: Models, tmp_path: Path, data_dir: Path) -> None:
        self.request, self.models, self.tmp, self.data_dir = request, models, tmp_path, data_dir
        self.image_front_end = ImagePatchEmbed(img_size=32, patch_size=8, embedding_dimension=16)
        self.audio_front_end = AudioPatchEmbed(embedding_dimension=16, target_frames=64)

    @property
    def token_model(self):
        return self.request.getfixturevalue("tiny_model")

    def write(self, name: str, content: bytes | str) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        return path

    def jpeg_bytes(self) -> bytes:
        folder = self.data_dir / "images" / "flickr8k"
        return min(folder.iterdir()).read_bytes()

    def image_file(self, name: str, image: Image.Image, **save_kwargs) -> Path:
        path = self.tmp / name
        image.save(path, **save_kwargs)
        return path

    def wav(self, name: str, samples: np.ndarray, sampling_rate: int, subtype: str | None = None) -> Path:
        path = self.tmp / name
        soundfile.write(path, samples, sampling_rate, subtype=subtype)
        return path

    def sts_year_folder(self, gold_line: str) -> Path:
        """An STS13 folder (3 subsets of 2 pairs); line 2 of FNWN's gold file is ``gold_line``."""
        folder = self.tmp / "STS13-en-test"
        folder.mkdir()
        for subset in ("FNWN", "headlines", "OnWN"):
            (folder / f"STS.input.{subset}.txt").write_text(
                "A man sings.\tA man is singing.\nA cat.\tA dog.\n", encoding="utf-8"
            )
            gold = f"4.2\n{gold_line}\n" if subset == "FNWN" else "4.2\n1.0\n"
            (folder / f"STS.gs.{subset}.txt").write_text(gold, encoding="utf-8")
        return folder


@pytest.fixture
def env(request, models, tmp_path, data_dir) -> Env:
    return Env(request, models, tmp_path, data_dir)


@dataclass(frozen=True)
class Case:
    """One bad input: ``feed`` sends it where it enters; then either ``raises`` (a ValueError whose message matches
    and names the item) or ``check`` (the documented handling) applies."""

    id: str
    feed: Callable[[Env], Any]
    raises: str | None = None
    check: Callable[[Env, Any], None] | None = None


def encode(model, texts: list[Any], **kwargs) -> np.ndarray:
    return model.encode(texts, convert_to_numpy=True, **kwargs)


def same_embedding(model_of: Callable[[Env], Any], reference: list[Any]) -> Callable[[Env, Any], None]:
    """The check "encoded exactly like ``reference``" (and finite)."""

    def check(env: Env, embedding: np.ndarray) -> None:
        assert np.isfinite(embedding).all()
        np.testing.assert_allclose(embedding, encode(model_of(env), reference), atol=1e-6)

    return check


def same_as_export(env: Env, texts: list[str], embedding: np.ndarray) -> None:
    """``embedding`` is what the plain text export of the same model gives for ``texts``."""
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.export.text_model import export_text_model

    folder = export_text_model(env.token_model, env.tmp / "export")
    np.testing.assert_allclose(embedding, encode(SentenceTransformer(str(folder)), texts), rtol=0, atol=1e-6)


def rgb_pixel(expected: tuple[int, int, int], atol: int = 0) -> Callable[[Env, Image.Image], None]:
    def check(env: Env, image: Image.Image) -> None:
        assert image.mode == "RGB"
        np.testing.assert_allclose(np.asarray(image)[0, 0], expected, atol=atol)

    return check


def same_pixels_as_open_image(path_of: Callable[[Env], Path]) -> Callable[[Env, dict[str, torch.Tensor]], None]:
    """ImagePatchEmbed.preprocess of a lazily opened file gives what it gives for open_image's decoded RGB image."""

    def check(env: Env, features: dict[str, torch.Tensor]) -> None:
        assert features["pixel_values"].shape == (1, 3, 32, 32)
        expected = env.image_front_end.preprocess([open_image(path_of(env))])["pixel_values"]
        torch.testing.assert_close(features["pixel_values"], expected)

    return check


def audio_like(reference: Any) -> Callable[[Env, dict[str, torch.Tensor]], None]:
    """AudioPatchEmbed.preprocess gives the features of ``reference`` (a float32 16 kHz mono waveform)."""

    def check(env: Env, features: dict[str, torch.Tensor]) -> None:
        expected = env.audio_front_end.preprocess([reference])["input_features"]
        assert features["input_features"].shape == (1, 128, 64)
        torch.testing.assert_close(features["input_features"], expected, atol=1e-4, rtol=1e-4)

    return check


def token(env: Env):
    return env.token_model


def pixel(env: Env):
    return env.models.pixel


RNG = np.random.default_rng(0)
NOISE = RNG.uniform(-0.5, 0.5, 16000).astype(np.float32)
INT16 = (NOISE * 32767).astype(np.int16)
TONE = np.sin(2 * np.pi * 440 * np.arange(16000 * 60) / 16000).astype(np.float32)  # 60 s, whole periods

# Image files, by mode, with the RGB value open_image must give for their first pixel.
MODE_FILES: list[tuple[str, Callable[[], Image.Image], dict[str, Any], tuple[int, int, int], int]] = [
    ("grayscale-L.png", lambda: Image.new("L", (6, 4), 77), {}, (77, 77, 77), 0),
    ("rgba-transparent.png", lambda: Image.new("RGBA", (6, 4), (255, 0, 0, 0)), {}, (255, 255, 255), 0),
    ("palette-P.png", lambda: Image.new("RGB", (6, 4), (10, 200, 30)).quantize(4), {}, (10, 200, 30), 0),
    ("cmyk.jpg", lambda: Image.new("CMYK", (8, 8), (0, 255, 255, 0)), {"quality": 95}, (255, 0, 0), 40),
    ("gray16-I16.png", lambda: Image.fromarray(np.full((4, 6), 32896, np.uint16)), {}, (128, 128, 128), 1),
    (
        "animated.gif",
        lambda: Image.new("RGB", (8, 8), (255, 0, 0)),
        {"save_all": True, "append_images": [Image.new("RGB", (8, 8), (0, 0, 255))], "duration": 100, "loop": 0},
        (255, 0, 0),  # the first frame is used
        8,
    ),
]


def mode_file(env: Env, index: int) -> Path:
    name, make, save_kwargs, _, _ = MODE_FILES[index]
    path = env.tmp / name
    if not path.exists():
        make().save(path, **save_kwargs)
    return path


def image_mode_cases() -> list[Case]:
    cases = []
    for index, (name, _, _, expected, atol) in enumerate(MODE_FILES):
        stem = name.rsplit(".", 1)[0]
        cases.append(
            Case(
                f"image-file-{stem}",
                lambda env, i=index: open_image(mode_file(env, i)),
                check=rgb_pixel(expected, atol),
            )
        )
        cases.append(
            Case(
                f"image-preprocess-lazy-{stem}",
                lambda env, i=index: env.image_front_end.preprocess([Image.open(mode_file(env, i))]),
                check=same_pixels_as_open_image(lambda env, i=index: mode_file(env, i)),
            )
        )
    return cases


def folder_with_a_broken_image(env: Env) -> Dataset:
    """Two classes of 2 good photos; the broken file is the third item (row 2) in the sorted order."""
    raw = env.jpeg_bytes()
    for name in ("a/0.jpg", "a/1.jpg", "b/1.jpg", "b/2.jpg"):
        env.write(name, raw)
    env.write("b/0_broken.jpg", raw[: len(raw) // 3])
    dataset, _ = image_folder_dataset(env.tmp, img_size=16)
    return dataset


def image_bytes_dataset() -> Dataset:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (0, 128, 0)).save(buffer, "PNG")
    images = [{"bytes": buffer.getvalue(), "path": None}, {"bytes": b"GIF89a garbage", "path": None}]
    features = Features({"image": ImageFeature(), "label": Value("int64")})
    return two_view_image_dataset(Dataset.from_dict({"image": images, "label": [0, 1]}, features=features), img_size=8)


CASES: list[Case] = [
    # ---- text through a token model (router -> tokenizer -> BERT) ----
    Case("text-token-none", lambda env: encode(env.token_model, ["fine", None]), raises=r"input 1 is None"),
    Case(
        "text-token-empty",  # encoded as the plain export encodes it: [CLS] [SEP]
        lambda env: encode(env.token_model, ["fine", ""]),
        check=lambda env, embedding: same_as_export(env, ["fine", ""], embedding),
    ),
    Case(
        "text-token-whitespace",
        lambda env: encode(env.token_model, [" \t\n\u3000", "fine"]),
        check=lambda env, embedding: same_as_export(env, [" \t\n\u3000", "fine"], embedding),
    ),
    Case(
        "text-token-none-named-by-its-batch-position",
        lambda env: encode(env.token_model, [None, "a longer sentence"]),
        raises=r"input 1 is None;.*Positions count within the batch",
    ),
    Case(
        "text-token-not-a-string",
        lambda env: encode(env.token_model, ["fine", 3]),
        raises=r"input 1 \(int\) has no known modality",
    ),
    Case(
        "text-token-10000-chars",  # cut to max_seq_length tokens
        lambda env: encode(env.token_model, ["word " * 2000]),
        check=same_embedding(token, ["word " * 40]),
    ),
    Case(
        "text-token-control-chars",  # the BERT tokenizer drops control characters
        lambda env: encode(env.token_model, ["a man\x00 is\x07 play\x1bing"]),
        check=same_embedding(token, ["a man is playing"]),
    ),
    Case(
        "text-token-lone-surrogate",  # should read like U+FFFD, as the pixel route does
        lambda env: encode(env.token_model, ["a lone \ud800 surrogate"]),
        check=same_embedding(token, ["a lone \ufffd surrogate"]),
    ),
    # ---- text through a pixel model (router -> PixelRenderer -> PIXEL encoder) ----
    Case("text-pixel-none", lambda env: encode(env.models.pixel, ["fine", None]), raises=r"input 1 is None"),
    Case(
        "text-pixel-none-named-by-its-batch-position",
        lambda env: encode(env.models.pixel, [None, "fine"]),
        raises=r"input 1 is None;.*Positions count within the batch",
    ),
    Case(
        "text-pixel-empty",  # only the EOS patch, as for text whose every character is removed
        lambda env: encode(env.models.pixel, ["fine", ""])[1:],
        check=same_embedding(pixel, ["\x00"]),
    ),
    Case(
        "text-pixel-whitespace",  # as PIXEL: a line break is drawn as a space (tabs go to Pango's tab stops)
        lambda env: encode(env.models.pixel, ["fine", "\n  "])[1:],
        check=same_embedding(pixel, ["   "]),
    ),
    Case(
        "text-pixel-10000-chars",  # cut at the strip's end; the EOS patch stays in the last patch
        lambda env: encode(env.models.pixel, ["x" * 10_000]),
        check=same_embedding(pixel, ["x" * 1_000]),
    ),
    Case(
        # U+0000 removed; "\n" -> space; tabs and other control characters go to Pango (PIXEL)
        "text-pixel-control-chars",
        lambda env: encode(env.models.pixel, ["a\x00b\tc\x07\nd"]),
        check=same_embedding(pixel, ["ab\tc\x07 d"]),
    ),
    Case(
        "text-pixel-lone-surrogate",  # drawn as U+FFFD
        lambda env: encode(env.models.pixel, ["a \ud800 b"]),
        check=same_embedding(pixel, ["a \ufffd b"]),
    ),
    # ---- text through the data readers ----
    Case(
        "text-file-empty",
        lambda env: read_sentences(env.write("empty.txt", "")),
        raises=r"empty\.txt holds no sentences",
    ),
    Case(
        "text-file-blank-lines",  # blank and whitespace-only lines are skipped, sentences are stripped
        lambda env: read_sentences(env.write("blank.txt", "one\n  \n\t\n two \n")),
        check=lambda env, sentences: sentences == ["one", "two"],
    ),
    Case(
        "text-file-10000-chars",  # kept whole: cutting is the model's job
        lambda env: read_sentences(env.write("long.txt", "x" * 10_000 + "\nshort\n")),
        check=lambda env, sentences: [len(s) for s in sentences] == [10_000, 5],
    ),
    Case(
        "text-file-control-chars",  # kept; form feed, U+001C, U+0085, U+2028 do not end a line
        lambda env: read_sentences(env.write("ctrl.txt", "a\x00b\x0cc\x1cd\x85e\u2028f\nnext\r\nlast\n")),
        check=lambda env, sentences: sentences == ["a\x00b\x0cc\x1cd\x85e\u2028f", "next", "last"],
    ),
    Case(
        "text-file-latin-1",
        lambda env: read_sentences(env.write("latin1.txt", "café\n".encode("latin-1"))),
        raises=r"latin1\.txt: not valid UTF-8 \(byte 3\)",
    ),
    Case(
        "text-file-encoded-surrogate",  # a lone surrogate written as UTF-8 bytes (CESU-8) is invalid UTF-8
        lambda env: read_sentences(env.write("surrogate.txt", b"ok\nbad \xed\xa0\x80 line\n")),
        raises=r"surrogate\.txt: not valid UTF-8 \(byte 7\)",
    ),
    Case(
        "nli-missing-column",
        lambda env: read_nli_triplets(env.write("nli.csv", "sent0,sent1\na,b\n")),
        raises=r"nli\.csv: expected the header sent0,sent1,hard_neg",
    ),
    Case(
        "nli-short-row",
        lambda env: read_nli_triplets(env.write("nli.csv", "sent0,sent1,hard_neg\na,b,c\nd,e\n")),
        raises=r"nli\.csv:3: expected 3 columns",
    ),
    Case(
        "nli-empty-field",
        lambda env: read_nli_triplets(env.write("nli.csv", "sent0,sent1,hard_neg\na,b, \n")),
        raises=r"nli\.csv:2 hard_neg is empty",
    ),
    Case(
        "nli-latin-1",
        lambda env: read_nli_triplets(env.write("nli.csv", "sent0,sent1,hard_neg\nà,b,c\n".encode("latin-1"))),
        raises=r"nli\.csv: not valid UTF-8",
    ),
    # ---- images: files ----
    Case(
        "image-zero-byte-file",
        lambda env: open_image(env.write("empty.jpg", b"")),
        raises=r"Cannot decode image '.*empty\.jpg'",
    ),
    Case(
        "image-truncated-jpeg",
        lambda env: open_image(env.write("cut.jpg", env.jpeg_bytes()[:2000])),
        raises=r"Cannot decode image '.*cut\.jpg'",
    ),
    Case(
        "image-not-an-image",
        lambda env: open_image(env.write("text.png", "hello")),
        raises=r"Cannot decode image '.*text\.png': not a known image format",
    ),
    Case(
        "image-file-1x1",
        lambda env: open_image(env.image_file("dot.png", Image.new("RGB", (1, 1), (1, 2, 3)))),
        check=lambda env, image: image.size == (1, 1) and image.getpixel((0, 0)) == (1, 2, 3),
    ),
    Case(
        "image-preprocess-1x1",  # upsampled to img_size
        lambda env: env.image_front_end.preprocess([Image.new("RGB", (1, 1), (255, 0, 0))]),
        check=lambda env, features: (
            features["pixel_values"].shape == (1, 3, 32, 32) and torch.isfinite(features["pixel_values"]).all()
        ),
    ),
    Case(
        "image-file-10000x10000",  # over MAX_IMAGE_PIXELS: rejected from the header, before decoding
        lambda env: open_image(png_one_colour(env.tmp / "big.png", 10_000, 10_000)),
        raises=r"Image '.*big\.png' has 10000x10000 = 100000000 pixels, more than MAX_IMAGE_PIXELS",
    ),
    Case(
        "image-preprocess-lazy-10000x10000",  # an Image.open()ed file is rejected before it is read
        lambda env: env.image_front_end.preprocess(
            [Image.new("RGB", (2, 2)), Image.open(png_one_colour(env.tmp / "big.png", 10_000, 10_000))]
        ),
        raises=r"image 1 has 10000x10000 = 100000000 pixels",
    ),
    Case(
        "image-file-20000x20000",  # beyond PIL's decompression-bomb limit: its error, named
        lambda env: open_image(png_one_colour(env.tmp / "bomb.png", 20_000, 20_000)),
        raises=r"Cannot decode image '.*bomb\.png': Image size \(400000000 pixels\) exceeds limit",
    ),
    *image_mode_cases(),
    # ---- images: datasets decode lazily; a bad item is named by its row and file ----
    Case(
        "image-folder-dataset-broken-item",
        lambda env: folder_with_a_broken_image(env)[2],
        raises=r"row 2: Cannot decode image '.*0_broken\.jpg'",
    ),
    Case(
        "image-bytes-dataset-broken-item",
        lambda env: image_bytes_dataset()[1],
        raises=r"row 1: Cannot decode image 'embedded image bytes'",
    ),
    # ---- audio: waveforms through AudioPatchEmbed.preprocess (bare arrays are 16 kHz) ----
    Case(
        "audio-empty",
        lambda env: env.audio_front_end.preprocess([NOISE, np.zeros(0, np.float32)]),
        raises=r"audio 1 has shape \(0,\)",
    ),
    Case(
        "audio-one-sample",
        lambda env: env.audio_front_end.preprocess([NOISE, np.zeros(1, np.float32)]),
        raises=r"audio 1 has 1 samples at 16 kHz",
    ),
    Case(
        "audio-nan",
        lambda env: env.audio_front_end.preprocess([np.where(np.arange(16000) == 7, np.nan, NOISE)]),
        raises=r"audio 0 contains NaN",
    ),
    Case(
        "audio-inf",
        lambda env: env.audio_front_end.preprocess([NOISE, np.where(np.arange(16000) == 7, -np.inf, NOISE)]),
        raises=r"audio 1 contains NaN or infinite",
    ),
    Case(
        "audio-int16",
        lambda env: env.audio_front_end.preprocess([INT16]),
        check=audio_like(INT16.astype(np.float32) / 32768),
    ),  # PCM / 32768
    Case(
        "audio-float64",
        lambda env: env.audio_front_end.preprocess([NOISE.astype(np.float64)]),
        check=audio_like(NOISE),
    ),
    Case(
        "audio-stereo-channels-first",
        lambda env: env.audio_front_end.preprocess([np.stack([NOISE, -NOISE / 2])]),
        check=audio_like(NOISE / 4),
    ),  # mean
    Case(
        "audio-stereo-channels-last",
        lambda env: env.audio_front_end.preprocess([np.stack([NOISE, -NOISE / 2], axis=1)]),
        check=audio_like(NOISE / 4),
    ),
    Case(
        "audio-8khz",  # resampled to 16 kHz
        lambda env: waveform_to_mono_16k({"array": NOISE[:8000], "sampling_rate": 8000}, "audio 0"),
        check=lambda env, waveform: waveform.shape == (16000,) and waveform.dtype == torch.float32,
    ),
    Case(
        "audio-48khz",
        lambda env: waveform_to_mono_16k({"array": np.tile(NOISE, 3), "sampling_rate": 48000}, "audio 0"),
        check=lambda env, waveform: waveform.shape == (16000,) and torch.isfinite(waveform).all(),
    ),
    Case(
        "audio-60-seconds",  # under the cap: the fbank is cut to target_frames
        lambda env: env.audio_front_end.preprocess([TONE]),
        check=audio_like(TONE[:16000]),
    ),
    Case(
        "audio-1-hour",  # over MAX_SECONDS: rejected before any copy of the samples
        lambda env: env.audio_front_end.preprocess(
            [{"array": np.zeros(1000 * 3600, np.int16), "sampling_rate": 1000}]
        ),
        raises=rf"audio 0 is 3600 s long; at most {MAX_SECONDS} s",
    ),
    Case(
        "audio-bad-sampling-rate",
        lambda env: env.audio_front_end.preprocess([{"array": NOISE, "sampling_rate": 16000.5}]),
        raises=r"audio 0 has sampling_rate=16000\.5",
    ),
    # ---- audio: files through read_audio ----
    Case(
        "audio-file-zero-byte",
        lambda env: read_audio(env.write("zero.wav", b"")),
        raises=r"Cannot decode audio '.*zero\.wav'",
    ),
    Case(
        "audio-file-no-samples",
        lambda env: read_audio(env.wav("empty.wav", np.zeros(0, np.int16), 16000)),
        raises=r"Audio '.*empty\.wav' holds 0 samples",
    ),
    Case(
        "audio-file-one-sample",
        lambda env: read_audio(env.wav("one.wav", np.zeros(1, np.int16), 16000)),
        raises=r"Audio '.*one\.wav' holds 1 samples",
    ),
    Case(
        "audio-file-nan",
        lambda env: read_audio(
            env.wav("nan.wav", np.where(np.arange(16000) == 3, np.nan, NOISE), 16000, subtype="FLOAT")
        ),
        raises=r"Audio '.*nan\.wav' contains NaN",
    ),
    Case(
        "audio-file-1-hour",  # checked from the header (a 100 Hz file keeps the test small), before decoding
        lambda env: read_audio(env.wav("hour.wav", np.zeros(100 * 3600, np.int16), 100)),
        raises=r"Audio '.*hour\.wav' is 3600 s long; at most 600 s",
    ),
    Case(
        "audio-file-stereo-8khz-int16",  # float32 (samples, channels) at the file's rate; the front-end downmixes
        lambda env: read_audio(
            env.wav("stereo.wav", np.stack([INT16[:8000], INT16[:8000]], axis=1), 8000, subtype="PCM_16")
        ),
        check=lambda env, audio: (
            audio["array"].shape == (8000, 2)
            and audio["sampling_rate"] == 8000
            and env.audio_front_end.preprocess([audio])["input_features"].shape == (1, 128, 64)
        ),
    ),
    # ---- STS files ----
    Case(
        "sts-b-missing-columns",
        lambda env: read_stsb_csv(env.write("sts.csv", "main\tx\t2012\t1\t5.0\tA.\tB.\nmain\tx\t2012\t2\t5.0\n")),
        raises=r"sts\.csv:2: expected at least 7 TAB-separated columns, found 5",
    ),
    Case(
        "sts-b-non-numeric-score",
        lambda env: read_stsb_csv(env.write("sts.csv", "main\tx\t2012\t1\thigh\tA.\tB.\n")),
        raises=r"sts\.csv:1: score 'high' is not a number",
    ),
    Case(
        "sts-b-infinite-score",
        lambda env: read_stsb_csv(env.write("sts.csv", "main\tx\t2012\t1\tinf\tA.\tB.\n")),
        raises=r"sts\.csv:1: score 'inf' is not a finite number",
    ),
    Case(
        "sts-b-empty-sentence",
        lambda env: read_stsb_csv(env.write("sts.csv", "main\tx\t2012\t1\t3\tA.\t \n")),
        raises=r"sts\.csv:1 sentence 2 is empty",
    ),
    Case(
        "sts-b-latin-1",
        lambda env: read_stsb_csv(env.write("sts.csv", "main\tx\t2012\t1\t3\tCafé.\tB.\n".encode("latin-1"))),
        raises=r"sts\.csv: not valid UTF-8 \(byte \d+\)",
    ),
    Case(
        "sts-b-next-line-char-in-sentence",  # U+0085 inside a sentence does not split the row
        lambda env: read_stsb_csv(env.write("sts.csv", "main\tx\t2012\t1\t3\tA\x85b.\tB.\n")),
        check=lambda env, data: data.sentences1 == ["A\x85b."] and data.scores == [3.0],
    ),
    Case(
        "sick-missing-columns",
        lambda env: read_sick(
            env.write("SICK.txt", "pair_ID\tsentence_A\tsentence_B\trelatedness_score\n1\tA.\tB.\n")
        ),
        raises=r"SICK\.txt:2: expected at least 4",
    ),
    Case(
        "sts-year-non-numeric-gold",
        lambda env: read_sts_year(env.sts_year_folder("n/a"), "STS13"),
        raises=r"STS\.gs\.FNWN\.txt:2: score 'n/a' is not a number",
    ),
    Case(
        "stsb-multi-missing-column",
        lambda env: read_stsb_multi(env.write("multi.csv", 'a,b,1.0\n"c, d",2.0\n'), "x"),
        raises=r"multi\.csv:2: expected 3 columns",
    ),
    Case(
        "stsb-multi-latin-1",
        lambda env: read_stsb_multi(env.write("multi.csv", "é,b,1.0\n".encode("latin-1")), "x"),
        raises=r"multi\.csv: not valid UTF-8",
    ),
    # ---- captions files ----
    Case(
        "captions-token-no-tab",
        lambda env: read_captions(env.write("captions.txt", "a.jpg#0\tA dog.\na.jpg#1 A cat.\n")),
        raises=r"captions\.txt:2: expected '<image>#<n><TAB><caption>'",
    ),
    Case(
        "captions-token-empty-caption",
        lambda env: read_captions(env.write("captions.txt", "a.jpg#0\t  \n")),
        raises=r"captions\.txt:1 caption is empty",
    ),
    Case(
        "captions-token-no-image",
        lambda env: read_captions(env.write("captions.txt", "#0\tA dog.\n")),
        raises=r"captions\.txt:1 image is ''",
    ),
    Case(
        "captions-latin-1",
        lambda env: read_captions(env.write("captions.txt", "a.jpg#0\tUn café.\n".encode("latin-1"))),
        raises=r"captions\.txt: not valid UTF-8",
    ),
    Case(
        "captions-jsonl-not-json",
        lambda env: read_captions(env.write("captions.jsonl", '{"image": "a.jpg", "caption": "A dog."}\n{oops\n')),
        raises=r"captions\.jsonl:2: expected a JSON object",
    ),
    Case(
        "captions-jsonl-missing-key",
        lambda env: read_captions(env.write("captions.jsonl", '{"image": "a.jpg"}\n')),
        raises=r"captions\.jsonl:1: expected a JSON object with 'image' and 'caption'",
    ),
    Case(
        "captions-jsonl-null-image",
        lambda env: read_captions(env.write("captions.jsonl", '{"image": null, "caption": "A dog."}\n')),
        raises=r"captions\.jsonl:1 image is None",
    ),
    Case(
        "captions-csv-missing-column",
        lambda env: read_captions(env.write("captions.csv", "image,text\na.jpg,A dog.\n")),
        raises=r"captions\.csv: expected columns 'image' and 'caption'",
    ),
    Case(
        "captions-csv-short-row",
        lambda env: read_captions(env.write("captions.csv", "image,caption\na.jpg,A dog.\nb.jpg\n")),
        raises=r"captions\.csv:3 caption is None",
    ),
    # ---- configurations ----
    Case(
        "config-image-width-mismatch",
        lambda env: _router(env, {"image": ImagePatchEmbed(img_size=32, patch_size=8, embedding_dimension=64)}),
        raises=r"Route 'image': ImagePatchEmbed makes tokens of width 64, but the shared encoder's hidden size is 32",
    ),
    Case(
        "config-audio-width-mismatch",
        lambda env: _router(env, {"audio": AudioPatchEmbed(embedding_dimension=48, target_frames=64)}),
        raises=r"Route 'audio': AudioPatchEmbed makes tokens of width 48",
    ),
    Case(
        "config-unknown-route",
        lambda env: _router(env, {"video": ImagePatchEmbed(img_size=32, patch_size=8, embedding_dimension=32)}),
        raises=r"Route 'video' is not a modality",
    ),
    Case(
        "config-mixed-text-image-batch",  # sentence-transformers' encode rejects it first, naming the modalities
        lambda env: encode(env.models.multimodal, ["a red square", Image.new("RGB", (8, 8), (255, 0, 0))]),
        raises=r"This batch mixes multiple modalities \(image, text\)",
    ),
    Case(
        "config-mixed-image-audio-batch",
        lambda env: encode(
            env.models.multimodal, [Image.new("RGB", (8, 8)), {"array": NOISE, "sampling_rate": 16000}]
        ),
        raises=r"This batch mixes multiple modalities \(audio, image\)",
    ),
    Case(
        "config-mixed-batch-in-router",  # the ModalityRouter itself names the first two items that differ
        lambda env: env.models.multimodal[0].preprocess(
            ["a red square", "a cat", Image.new("RGB", (8, 8), (255, 0, 0))]
        ),
        raises=r"input 0 is 'text' but input 2 is 'image'",
    ),
    Case(
        "config-modality-without-route",
        lambda env: encode(env.token_model, [Image.new("RGB", (8, 8))]),
        raises=r"Modality 'image' is not supported",
    ),
    Case(
        "config-one-modality-per-call",  # the documented way: each modality in its own call
        lambda env: (
            encode(env.models.multimodal, ["a red square"]),
            encode(env.models.multimodal, [Image.new("RGB", (8, 8), (255, 0, 0))]),
        ),
        check=lambda env, pair: pair[0].shape == pair[1].shape == (1, 32),
    ),
]


def _router(env: Env, front_ends: dict[str, Any]):
    from sbert_nonling import ModalityRouter, SharedEncoder

    return ModalityRouter.from_encoder(SharedEncoder(env.models.tiny_encoder_dir), front_ends=front_ends)


def _param(case: Case):
    return pytest.param(case, id=case.id)


def test_the_table_is_complete_and_every_rejection_names_the_item():
    assert len(CASES) >= 40 and len({case.id for case in CASES}) == len(CASES)
    for case in CASES:
        assert (case.raises is None) != (case.check is None), case.id
        if case.raises is not None:
            assert NAMES_THE_ITEM.search(case.raises), f"{case.id}: {case.raises!r} does not name the item"


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_bad_input(case: Case, env: Env):
    if case.raises is not None:
        with pytest.raises(ValueError, match=case.raises):
            case.feed(env)
    else:
        result = case.feed(env)
        assert case.check(env, result) is not False


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_the_image_cap_bounds_memory(tmp_path):
    """A 10,000 x 10,000 file would take 100 MB decoded and 300 MB as RGB; rejecting it costs almost nothing."""
    path = png_one_colour(tmp_path / "big.png", 10_000, 10_000, value=128)
    assert path.stat().st_size < 1_000_000 and 10_000 * 10_000 > MAX_IMAGE_PIXELS
    growth, outcome = peak_memory_growth(lambda: open_image(path))
    assert isinstance(outcome, ValueError) and "MAX_IMAGE_PIXELS" in str(outcome)
    assert growth < 20 * 2**20, f"rejecting the image grew peak memory by {growth / 2**20:.0f} MiB"
    growth, outcome = peak_memory_growth(
        lambda: ImagePatchEmbed(img_size=32, patch_size=8, embedding_dimension=16).preprocess([Image.open(path)])
    )
    assert isinstance(outcome, ValueError) and growth < 20 * 2**20


def test_an_epoch_stops_at_the_broken_image_with_its_row_and_path(env):
    """Batches before the broken file load; the failing batch names the row and the file, not a PIL error."""
    dataset = folder_with_a_broken_image(env)
    loader = DataLoader(dataset, batch_size=2, collate_fn=list)
    batches = iter(loader)
    first = next(batches)
    assert [row["label"] for row in first] == [0, 0] and all(row["view_1"].size == (16, 16) for row in first)
    with pytest.raises(ValueError, match=r"row 2: Cannot decode image '.*b/0_broken\.jpg'"):
        next(batches)
    assert [dataset[index]["label"] for index in (3, 4)] == [1, 1]  # the items after it still load


def test_an_epoch_over_image_bytes_names_the_row(env):
    dataset = image_bytes_dataset()
    assert dataset[0]["view_1"].size == (8, 8)
    with pytest.raises(ValueError, match=r"Image dataset row 1: Cannot decode image 'embedded image bytes'"):
        list(DataLoader(dataset, batch_size=1, collate_fn=list))


def test_audio_cap_is_checked_before_the_samples_are_copied():
    """A one-hour int16 clip is rejected before the float conversion (8 bytes per sample) would be made."""
    samples = np.zeros(16000 * 3600 // 8, np.int16)  # 1 hour at 2 kHz: 14 MB
    growth, outcome = peak_memory_growth(
        lambda: waveform_to_mono_16k({"array": samples, "sampling_rate": 2000}, "audio 0")
    )
    assert isinstance(outcome, ValueError) and "3600 s long" in str(outcome)
    assert growth < 20 * 2**20
    assert math.isclose(len(samples) / 2000, 3600)
