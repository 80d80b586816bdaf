"""PixelRenderer: real Pango rendering (no mocks): golden hashes, reproducibility, PIXEL's geometry, hostile text, the
recorded rendering environment."""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from packaging.version import Version
from PIL import Image

from sbert_nonling.modules.pixel_renderer import PixelRenderer, render_preview, sanitize_text

GOLDEN_TEXTS = {
    "latin": "The quick brown fox jumps over the lazy dog.",
    "cyrillic_greek": "Съешь же ещё этих мягких булок. Ζαφείρι δέξου πάγκαλο.",
    "cjk": "我能吞下玻璃而不伤身体。日本語のテキスト。한국어",
    "arabic": "أنا قادر على أكل الزجاج و هذا لا يؤلمني.",
}
# sha256 of the uint8 strips of PixelRenderer() (64 patches), and the number of attended patches. The four strips are
# byte-identical to those PIXEL's own PangoCairoTextRenderer draws (pixel_values, num_text_patches + 1) on the machine
# that computed them (Pango 1.50.12, Cairo 1.16.0, FreeType 2.12.1, HarfBuzz 6.0.0) with the same font files,
# compared with PIXEL's code in a separate environment outside this repository.
GOLDEN_STRIPS = {
    "latin": ("4a65d98be23a2579847595bcd7493c01687a5dee46944bf7699402e1fc58529d", 19),
    "cyrillic_greek": ("5f03fcf6f0534dd776d05df3f5722d2632a6d528be70c1e057a49c52a6d4a279", 25),
    "cjk": ("ec655e018842e9d467fb5488718782576c7bd265d959ba3c89e8e504539e8b14", 21),
    "arabic": ("3069b7021a3f95bf58c90b176bb13b411716d4ee30a55ad17f5406c76c0d9ad7", 14),
}
# The font files the golden hashes were computed with (pinned in constraints.txt).
GOLDEN_FONT_VERSIONS = {
    "fontpkg-noto-sans": "2.15",
    "fontpkg-noto-sans-arabic": "2.12",
    "fontpkg-noto-sans-devanagari": "2.7",
    "noto-cjk-sans-otc": "0.0.1",
}
# Uncovered private-use character, emoji (no emoji font is bundled), a ZWJ sequence, mixed scripts.
UNUSUAL_TEXTS = ["\U0010fffd", "\U0001f600", "\U0001f469\u200d\U0001f4bb ok", "Hi 你好 مرحبا नमस्ते Ωμέγα"]
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "sbert_nonling"


@pytest.fixture(scope="module")
def renderer() -> PixelRenderer:
    return PixelRenderer()


def digest(strip: np.ndarray) -> str:
    return hashlib.sha256(strip.tobytes()).hexdigest()


def ink_columns(strip: np.ndarray, end: int) -> np.ndarray:
    return np.flatnonzero((strip[:, :end] < 255).any(axis=0))


@pytest.mark.parametrize("name", list(GOLDEN_TEXTS))
def test_golden_hashes(renderer, name):
    for package, version in GOLDEN_FONT_VERSIONS.items():
        installed = importlib.metadata.version(package)
        assert Version(installed) == Version(version), f"{package}=={installed}, not {version}: reinstall or recompute"
    strip, num_patches = renderer.render(GOLDEN_TEXTS[name])
    assert (digest(strip), num_patches) == GOLDEN_STRIPS[name]


def test_two_instances_and_a_copy_render_identically(renderer):
    other = PixelRenderer()
    clone = copy.deepcopy(renderer)
    for text in GOLDEN_TEXTS.values():
        expected = renderer.render(text)[0]
        np.testing.assert_array_equal(other.render(text)[0], expected)
        np.testing.assert_array_equal(clone.render(text)[0], expected)


def test_fresh_process_renders_identically(renderer, tmp_path):
    # The subprocess loads only sbert_nonling.rendering (the parent package would import sentence-transformers,
    # ~9 s), with a hostile environment: Japanese preferred language, a bogus FONTCONFIG_FILE, an empty cache.
    script = f"""
import hashlib, sys, types
package = types.ModuleType("sbert_nonling")
package.__path__ = [{str(PACKAGE_DIR)!r}]
sys.modules["sbert_nonling"] = package
from sbert_nonling.rendering import TextLineCanvas
fonts = ("Noto Sans", "Noto Sans Arabic", "Noto Sans Devanagari", "Noto Sans CJK JP")
canvas = TextLineCanvas(1024, 16, fonts, 8, 120, 2)
for text in {list(GOLDEN_TEXTS.values())!r}:
    coverage, width = canvas.draw(text)
    print(hashlib.sha256(coverage.tobytes()).hexdigest(), width)
"""
    env = {**os.environ, "LANGUAGE": "ja", "LC_ALL": "C", "FONTCONFIG_FILE": "/nonexistent/fonts.conf"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    expected = []
    for text in GOLDEN_TEXTS.values():
        coverage, width = renderer._canvas.draw(text)
        expected.append(f"{digest(coverage)} {width}")
    assert result.stdout.split("\n")[:-1] == expected
    assert any((tmp_path / "sbert-nonling" / "fontconfig").rglob("*.cache-*")), "fontconfig cache not written"


def test_geometry_of_a_latin_sentence(renderer):
    strip, num_patches = renderer.render("HELLO WORLD THIS IS PIXEL")
    assert strip.shape == (16, 64 * 16) and strip.dtype == np.uint8
    eos_start = (num_patches - 1) * 16
    ink = ink_columns(strip, eos_start)
    assert 2 <= ink[0] < 4
    assert eos_start - 16 - 4 <= ink[-1] < eos_start - 1  # the text ends in the patch before EOS, 2 px margin
    assert (strip[:, eos_start : eos_start + 16] == 0).all()
    assert (strip[:, eos_start + 16 :] == 255).all()
    assert strip[:, :2].min() == 255
    # PIXEL's placement: the line is 19 px high (ascent 15 + descent 4), so its top is at 16 / 2 - 19 / 2 - 2 = -3.5
    # and the baseline at 11.5, drawn at row 12: capitals (9.5 px high) ink rows 3..11.
    ink_rows = np.flatnonzero((strip[:, :eos_start] < 128).any(axis=1))
    assert (ink_rows[0], ink_rows[-1]) == (3, 11)


def test_vertical_position_follows_the_height_of_the_layout(renderer):
    """A carriage return starts a second line in Pango (as in PIXEL): the layout is 38 px high, its top moves to
    8 - 19 - 2 = -13, so the first line's baseline is at row 2 (only the foot of "A" shows, rows 0-1) and the second
    line's at row 21 (only the top of "B" shows, rows 12-15). The width is the wider line's: one text patch."""
    strip, num_patches = renderer.render("A\rB")
    assert num_patches == 2
    assert np.flatnonzero((strip[:, :16] < 128).any(axis=1)).tolist() == [0, 1, 12, 13, 14, 15]
    np.testing.assert_array_equal(strip, renderer.render("A\u2028B")[0])  # a line separator does the same


def test_eos_start_formula(renderer):
    assert renderer.eos_start(0) == 16  # ceil((2 + 0 + 2) / 16) * 16
    assert renderer.eos_start(12) == 16
    assert renderer.eos_start(13) == 32
    assert renderer.eos_start(10**6) == 63 * 16  # min(..., max_pixels - 16)
    # The attended patches are floor(eos_start / 16) text patches and the EOS patch: "A B" is 21 px wide.
    strip, num_patches = renderer.render("A B")
    assert num_patches == renderer.eos_start(21) // 16 + 1 == 3
    assert (strip[:, 32:48] == 0).all() and (strip[:, 48:] == 255).all()


def test_preprocess_features(renderer):
    texts = ["A man is playing a guitar.", "", GOLDEN_TEXTS["arabic"]]
    features = renderer.preprocess(texts)
    pixel_values, attention_mask = features["pixel_values"], features["attention_mask"]
    assert pixel_values.shape == (3, 3, 16, 1024) and pixel_values.dtype == torch.float32
    assert attention_mask.shape == (3, 64) and attention_mask.dtype == torch.long
    assert 0.0 <= pixel_values.min() and pixel_values.max() <= 1.0
    assert torch.equal(pixel_values[:, 0], pixel_values[:, 1]) and torch.equal(pixel_values[:, 0], pixel_values[:, 2])
    for row, text in enumerate(texts):
        strip, num_patches = renderer.render(text)
        assert torch.equal(pixel_values[row, 0], torch.from_numpy(strip).float() / 255)
        assert attention_mask[row].tolist() == [1] * num_patches + [0] * (64 - num_patches)
    assert renderer.forward(features) is features


def test_prompt_is_prepended(renderer):
    with_prompt = renderer.preprocess(["a guitar"], prompt="query: ")
    assert torch.equal(with_prompt["pixel_values"], renderer.preprocess(["query: a guitar"])["pixel_values"])


def test_long_text_is_truncated_keeping_eos(renderer):
    strip, num_patches = renderer.render("lorem ipsum dolor sit amet " * 400)
    assert num_patches == 64
    assert (strip[:, -16:] == 0).all()
    assert (strip[:, -32:-16] < 255).any()  # text runs right up to the EOS patch
    assert renderer.preprocess(["x" * 10_000])["attention_mask"].tolist() == [[1] * 64]


def test_empty_text_is_a_blank_patch_then_the_eos_patch(renderer):
    strip, num_patches = renderer.render("")
    assert num_patches == 2  # PIXEL: width 0 -> eos_start = ceil((2 + 0 + 2) / 16) * 16 = 16
    assert (strip[:, :16] == 255).all() and (strip[:, 16:32] == 0).all() and (strip[:, 32:] == 255).all()


def test_only_newlines_become_spaces(renderer):
    np.testing.assert_array_equal(renderer.render("a\nb")[0], renderer.render("a b")[0])
    tab, tab_patches = renderer.render("A\tB")  # Pango's tab stop: 33 px wide against 21 px for "A B"
    assert tab_patches == 4 and not np.array_equal(tab, renderer.render("A B")[0])
    for character in ("\r", "\u2028", "\x85", "\x07"):
        assert not np.array_equal(renderer.render(f"a{character}b")[0], renderer.render("a b")[0]), repr(character)


def test_sanitize_text():
    assert sanitize_text("a\r\nb\tc") == "a\r b\tc"
    assert sanitize_text("a\x00b\x07c\x7f\x9f") == "ab\x07c\x7f\x9f"
    assert sanitize_text("x\ud800y") == "x\ufffdy"
    assert sanitize_text("\ud83d\ude00") == "\U0001f600"
    assert sanitize_text("a\u200bb") == "a\u200bb"


def test_nul_is_removed_and_surrogates_are_replaced(renderer):
    np.testing.assert_array_equal(renderer.render("a\x00b\x00")[0], renderer.render("ab")[0])
    np.testing.assert_array_equal(renderer.render("\ud800")[0], renderer.render("\ufffd")[0])
    np.testing.assert_array_equal(renderer.render("\ud83d\ude00")[0], renderer.render("\U0001f600")[0])
    np.testing.assert_array_equal(renderer.render("a\u200bb")[0], renderer.render("ab")[0])  # zero width


@pytest.mark.parametrize("text", UNUSUAL_TEXTS)
def test_uncovered_emoji_and_mixed_scripts_are_visible(renderer, text):
    strip, num_patches = renderer.render(text)
    eos_start = (num_patches - 1) * 16
    assert num_patches >= 2
    assert (strip[:, :eos_start] < 128).any()


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        (["ok", None], r"inputs\[1\] is a NoneType"),
        ([3, "ok"], r"inputs\[0\] is a int \(3\)"),
        ("a single text", r"inputs is a single str"),
    ],
)
def test_bad_inputs_name_the_item(renderer, inputs, match):
    with pytest.raises(ValueError, match=match):
        renderer.preprocess(inputs)


def test_render_rejects_non_str(renderer):
    with pytest.raises(ValueError, match=r"text is a bytes"):
        renderer.render(b"bytes")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_patches": 0}, r"max_patches=0 must be at least 1"),
        ({"patch_size": 0}, r"patch_size=0 must be a positive"),
        ({"dpi": 0}, r"must both be positive"),
        ({"pad_left": -1}, r"pad_left=-1 must be in \[0, 1024\)"),
        ({"font_family": "Go Noto Current"}, r"\['Go Noto Current'\] are not installed"),
        ({"fallback_fonts": ("Noto Sans, Noto Serif",)}, r"is not a single family name"),
        ({"font_dirs": ["/nonexistent/fonts"]}, r"font directory '/nonexistent/fonts' does not exist"),
        (
            {"font_dirs": "fonts"},
            r"font_dirs='fonts' must be a list of folder names \(a string is not read as one folder\)",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PixelRenderer(**kwargs)


def test_font_family_is_configurable(renderer):
    mono = PixelRenderer(font_family="Noto Sans Mono CJK SC")
    text = GOLDEN_TEXTS["latin"]
    assert digest(mono.render(text)[0]) != digest(renderer.render(text)[0])


def test_save_load_round_trip(renderer, tmp_path):
    custom = PixelRenderer(max_patches=32, font_family="Noto Sans CJK SC", fallback_fonts=("Noto Sans",), pad_left=3)
    custom.save(str(tmp_path))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pixel_renderer_config.json"]
    config = json.loads((tmp_path / "pixel_renderer_config.json").read_text())
    assert config["max_patches"] == 32 and config["fallback_fonts"] == ["Noto Sans"]
    loaded = PixelRenderer.load(str(tmp_path))
    assert loaded.get_config_dict() == custom.get_config_dict()
    texts = list(GOLDEN_TEXTS.values())
    for key, value in custom.preprocess(texts).items():
        assert torch.equal(loaded.preprocess(texts)[key], value)
    assert renderer.modalities == ["text"] and PixelRenderer.save_in_root is False


def test_saved_config_records_the_rendering_environment(renderer, tmp_path):
    renderer.save(str(tmp_path))
    environment = json.loads((tmp_path / "pixel_renderer_config.json").read_text())["render_environment"]
    assert sorted(environment["libraries"]) == ["cairo", "fontconfig", "freetype", "harfbuzz", "pango"]
    assert all(version.count(".") == 2 for version in environment["libraries"].values())
    assert environment["fonts"]["Noto Sans"] == {
        "NotoSans-Italic[wdth,wght].ttf": "2.015",
        "NotoSans[wdth,wght].ttf": "2.015",
    }
    assert sorted(environment["fonts"]) == sorted(renderer.font_families)


def _rewrite_config(folder: Path, change) -> None:
    path = folder / "pixel_renderer_config.json"
    config = json.loads(path.read_text())
    change(config)
    path.write_text(json.dumps(config))


def test_loading_warns_when_the_rendering_environment_differs(renderer, tmp_path, caplog):
    renderer.save(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.modules.pixel_renderer"):
        PixelRenderer.load(str(tmp_path))
    assert not caplog.records  # same machine, same versions

    def older_pango_and_font(config):
        config["render_environment"]["libraries"]["pango"] = "1.42.4"
        config["render_environment"]["fonts"]["Noto Sans"] = {"NotoSans-Regular.ttf": "2.013"}

    _rewrite_config(tmp_path, older_pango_and_font)
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.modules.pixel_renderer"):
        loaded = PixelRenderer.load(str(tmp_path))
    [record] = caplog.records
    assert "pango: saved with 1.42.4, this machine has" in record.getMessage()
    assert "Noto Sans: saved with {'NotoSans-Regular.ttf': '2.013'}" in record.getMessage()
    np.testing.assert_array_equal(loaded.render("Hi")[0], renderer.render("Hi")[0])  # it still renders, here


def test_config_without_a_record_loads_with_a_warning(renderer, tmp_path, caplog):
    renderer.save(str(tmp_path))
    _rewrite_config(tmp_path, lambda config: config.pop("render_environment"))  # as saved before the record existed
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.modules.pixel_renderer"):
        loaded = PixelRenderer.load(str(tmp_path))
    [record] = caplog.records
    assert "records no rendering library versions" in record.getMessage()
    assert loaded.get_config_dict() == renderer.get_config_dict()


def test_pixel_sized_strip_of_529_patches(renderer):
    large = PixelRenderer(max_patches=529)
    assert (large.max_patches, large.patch_size) == (529, 16)
    text = GOLDEN_TEXTS["latin"]
    strip, num_patches = large.render(text)
    small_strip, small_num_patches = renderer.render(text)
    assert strip.shape == (16, 8464) and num_patches == small_num_patches
    np.testing.assert_array_equal(strip[:, :1024], small_strip)
    assert (strip[:, 1024:] == 255).all()
    strip, num_patches = large.render("lorem ipsum dolor sit amet " * 400)
    assert num_patches == 529 and (strip[:, -16:] == 0).all() and (strip[:, -32:-16] < 255).any()
    assert large.preprocess(["a", "b"])["pixel_values"].shape == (2, 3, 16, 8464)
    # No ink of a long text survives into the next, short one (the canvas clears only what was inked).
    np.testing.assert_array_equal(large.render(text)[0], PixelRenderer(max_patches=529).render(text)[0])


def test_previews(renderer, tmp_path):
    assert renderer.save_preview("A man is playing a guitar.", tmp_path / "strip.png", scale=2) == 11
    with Image.open(tmp_path / "strip.png") as image:
        assert (image.mode, image.size) == ("L", (2048, 32))
    assert render_preview("Hi", tmp_path / "small.png", max_patches=8) == 3  # 2 + 13 + 2 px -> 2 patches
    with Image.open(tmp_path / "small.png") as image:
        assert image.size == (128, 16)
    with pytest.raises(ValueError, match=r"scale=0 must be a positive integer"):
        renderer.save_preview("Hi", tmp_path / "bad.png", scale=0)


def _saved_with_font_dirs(tmp_path, font_dirs):
    """A pixel model folder whose renderer config lists ``font_dirs`` (a crafted or hand-edited config)."""
    import json

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(modules=[PixelRenderer(max_patches=16)])
    model.save(str(tmp_path / "model"))
    (config_file,) = (tmp_path / "model").rglob(PixelRenderer.config_file_name)
    config = json.loads(config_file.read_text())
    config["font_dirs"] = font_dirs
    config_file.write_text(json.dumps(config))
    return tmp_path / "model", config_file


@pytest.mark.parametrize(
    ("font_dirs", "match"),
    [
        (["/usr"], r"font_dirs entry '/usr' is /usr, outside the model folder"),
        (["../../outside"], r"font_dirs entry '../../outside' is .*outside, outside the model folder"),
        ("fonts", r"font_dirs='fonts' must be a list of folder names"),
        (["missing"], r"font_dirs entry 'missing' \(.*missing\) is not a folder"),
    ],
)
def test_saved_font_dirs_stay_inside_the_model_folder(tmp_path, font_dirs, match):
    from sentence_transformers import SentenceTransformer

    (tmp_path / "outside").mkdir()
    folder, config_file = _saved_with_font_dirs(tmp_path, font_dirs)
    with pytest.raises(ValueError, match=rf"{config_file.name}: {match}"):
        SentenceTransformer(str(folder), trust_remote_code=True)


def test_saved_font_dirs_are_relative_to_the_renderer_folder_not_the_working_directory(tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    folder, config_file = _saved_with_font_dirs(tmp_path, ["fonts"])
    (config_file.parent / "fonts").mkdir()
    (tmp_path / "elsewhere" / "fonts").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "elsewhere")  # a working directory with its own fonts/ folder
    renderer = SentenceTransformer(str(folder), trust_remote_code=True)[0]
    assert renderer.font_dirs == ("fonts",) and renderer.font_paths == (str(config_file.parent / "fonts"),)
    monkeypatch.setenv("SBERT_NONLING_FONT_DIRS", str(tmp_path / "elsewhere"))  # the documented allow-list
    _, config_file = _saved_with_font_dirs(tmp_path / "second", [str(tmp_path / "elsewhere" / "fonts")])
    assert SentenceTransformer(str(tmp_path / "second" / "model"), trust_remote_code=True)[0].font_paths == (
        str(tmp_path / "elsewhere" / "fonts"),
    )
