"""TextLineCanvas: PIXEL's font size string, where the ink lands, the reused coverage buffer, the family checks."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_nonling.rendering import TextLineCanvas
from sbert_nonling.rendering.text_line import font_description_string

FAMILIES = ("Noto Sans", "Noto Sans Arabic", "Noto Sans Devanagari", "Noto Sans CJK JP")


@pytest.fixture(scope="module")
def canvas():
    return TextLineCanvas(256, 16, FAMILIES, font_size=8, dpi=120, x=2)


def test_the_font_size_is_pixel_s_absolute_pixel_size():
    assert font_description_string(8, 120) == f"{120 / 72 * 8}px" == "13.333333333333334px"


def test_ink_starts_at_x_and_the_width_grows_with_the_text(canvas):
    coverage, width = canvas.draw("Hello")
    assert coverage.shape == (16, 256) and coverage.dtype == np.uint8
    columns = np.flatnonzero(coverage.any(axis=0))
    assert columns.min() >= 2 and columns.max() < 2 + width + 2  # inside the layout's logical box
    assert canvas.draw("Hello world")[1] > width
    blank, blank_width = canvas.draw("")
    assert blank_width == 0 and not blank.any()


def test_the_text_sits_around_the_middle_of_the_strip(canvas):
    coverage, _ = canvas.draw("xxxx")  # x-height glyphs only
    rows = np.flatnonzero(coverage.any(axis=1))
    assert 3 <= rows.min() and rows.max() <= 12 and abs((rows.min() + rows.max()) / 2 - 7) <= 3


def test_the_coverage_is_one_reused_buffer(canvas):
    first, _ = canvas.draw("Hello")
    kept = first.copy()
    second, _ = canvas.draw("World")
    assert np.shares_memory(first, second) and not np.array_equal(kept, second)
    again, _ = canvas.draw("Hello")
    assert np.array_equal(again, kept)  # deterministic


@pytest.mark.parametrize(
    ("families", "message"),
    [
        (("Noto Sans, DejaVu Sans",), r"font family 'Noto Sans, DejaVu Sans' is not a single family name"),
        (("",), r"font family '' is not a single family name"),
        (
            ("DejaVu Sans",),
            r"font families \['DejaVu Sans'\] are not installed in the renderer's private font set .*Available: "
            r"\[.*'Noto Sans'",
        ),
    ],
)
def test_unknown_or_malformed_families_are_refused(families, message):
    with pytest.raises(ValueError, match=message):
        TextLineCanvas(64, 16, families, font_size=8, dpi=120, x=2)
