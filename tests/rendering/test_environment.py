"""The rendering environment record: the loaded libraries' versions, the font files' versions, readable differences."""

from __future__ import annotations

import re

import cairocffi
from pangocffi import pango_version_string

from sbert_nonling.rendering import environment_differences, library_versions, render_environment


def test_library_versions_are_the_loaded_libraries():
    versions = library_versions()
    assert sorted(versions) == ["cairo", "fontconfig", "freetype", "harfbuzz", "pango"]
    assert versions["pango"] == pango_version_string() and versions["cairo"] == cairocffi.cairo_version_string()
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in versions.values())


def test_the_record_holds_libraries_and_fonts_and_matches_itself():
    record = render_environment(["Noto Sans"])
    assert record["libraries"] == library_versions() and list(record["fonts"]) == ["Noto Sans"]
    assert environment_differences(record, render_environment(["Noto Sans"])) == []


def test_differences_name_each_library_and_family_with_both_values():
    current = {"libraries": {"pango": "1.50.12", "cairo": "1.16.0"}, "fonts": {"Noto Sans": {"NotoSans.ttf": "2.015"}}}
    saved = {"libraries": {"pango": "1.42.4", "cairo": "1.16.0"}, "fonts": {"Noto Serif": {"NotoSerif.ttf": "2.0"}}}
    assert environment_differences(saved, current) == [
        "pango: saved with 1.42.4, this machine has 1.50.12",
        "Noto Sans: saved with None, this machine has {'NotoSans.ttf': '2.015'}",
        "Noto Serif: saved with {'NotoSerif.ttf': '2.0'}, this machine has None",
    ]
    assert environment_differences({}, current)[0] == "cairo: saved with None, this machine has 1.16.0"
