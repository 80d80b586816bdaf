"""The private fontconfig: only the pip Noto fonts, a minimal fonts.conf written once per font set, font versions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sbert_nonling.rendering import (
    BUNDLED_FONT_PACKAGES,
    bundled_font_dirs,
    font_families,
    font_file_versions,
    private_font_map,
)
from sbert_nonling.rendering.font_config import fontconfig_version, fonts_conf_text, write_fonts_conf


def test_the_font_map_sees_the_bundled_noto_fonts_and_no_system_font():
    families = font_families(private_font_map(120))
    assert {"Noto Sans", "Noto Sans Arabic", "Noto Sans Devanagari", "Noto Sans CJK JP"} <= set(families)
    assert not any("DejaVu" in family for family in families)  # the machine's own fonts stay out
    assert len(bundled_font_dirs()) == len(BUNDLED_FONT_PACKAGES) and all(
        Path(folder).is_dir() for folder in bundled_font_dirs()
    )


def test_fonts_conf_lists_the_directories_escaped_and_one_cache():
    text = fonts_conf_text(["/fonts/a&b", "/fonts/c"], "/cache")
    assert (
        "<dir>/fonts/a&amp;b</dir>" in text and "<dir>/fonts/c</dir>" in text and "<cachedir>/cache</cachedir>" in text
    )
    assert "<match" not in text and "<alias" not in text  # no rules: nothing of the machine's configuration


def test_fonts_conf_is_written_once_per_font_set(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = write_fonts_conf(["/fonts/a"])
    assert first.is_relative_to(tmp_path / "sbert-nonling" / "fontconfig") and first.read_text() == fonts_conf_text(
        ["/fonts/a"], str(first.parent / "cache")
    )
    modified = first.stat().st_mtime_ns
    assert write_fonts_conf(["/fonts/a"]) == first and first.stat().st_mtime_ns == modified
    assert write_fonts_conf(["/fonts/b"]).parent != first.parent


def test_a_missing_extra_font_directory_is_named(tmp_path):
    with pytest.raises(ValueError, match=rf"font directory '{re.escape(str(tmp_path / 'missing'))}' does not exist"):
        private_font_map(120, extra_font_dirs=[tmp_path / "missing"])


def test_versions_of_fontconfig_and_of_the_font_files():
    assert re.fullmatch(r"\d+\.\d+\.\d+", fontconfig_version())
    versions = font_file_versions(["Noto Sans", "No Such Family"])
    assert versions["Noto Sans"] == {"NotoSans-Italic[wdth,wght].ttf": "2.015", "NotoSans[wdth,wght].ttf": "2.015"}
    assert versions["No Such Family"] == {}
