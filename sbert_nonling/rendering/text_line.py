"""TextLineCanvas: draws one line of text with Pango into an 8-bit Cairo strip, reusing one layout for every text."""

from __future__ import annotations

from collections.abc import Sequence

import cairocffi
import numpy as np
from pangocairocffi import ffi as pangocairo_ffi
from pangocairocffi import pangocairo
from pangocffi import ffi as pango_ffi
from pangocffi import gobject, pango

from sbert_nonling.rendering.font_config import font_families, private_font_map

PANGO_SCALE = 1024
# A cut text must reach this far past the strip's right edge, so the glyph cluster at the cut is never visible.
CUT_MARGIN_PX = 64
# Columns cleared before the next text: up to the previous text's right edge (ink or logical) plus this margin.
INK_MARGIN_PX = 16


class TextLineCanvas:
    """Draws single lines of text into a ``height`` x ``width`` strip of ink coverage (0 = none, 255 = full ink).

    Every text is laid out by one reused Pango layout on a private font map (see
    :mod:`sbert_nonling.rendering.font_config`) and drawn into one reused Cairo A8 surface, with its logical left
    edge at ``x`` and its baseline at :attr:`baseline`. The baseline is fixed for all texts: the primary font's line
    box (ascent + descent) is centred in the strip, rounded down to a whole pixel, so fallback fonts with taller
    boxes do not move the text. Never wraps, never ellipsizes. Rendering settings are fixed, not read from the
    machine: grayscale antialiasing, slight hinting, hinted metrics, glyph positions rounded to whole pixels, and the
    language tag ``xx`` ("none"), which keeps ``LANGUAGE`` / ``PANGO_LANGUAGE`` from selecting regional glyph forms
    (e.g. Japanese Han shapes). Characters no font covers are drawn as Pango's hex boxes.

    Texts far wider than the strip are laid out only up to a prefix that overflows the strip by
    :data:`CUT_MARGIN_PX` (doubling its length until it does), so a 10,000-character text costs about what a
    sentence costs. For left-to-right text this draws exactly what laying out the whole text would; when a
    right-to-left run crosses the cut, the visible part is the start of the text rather than its end.

    Not thread-safe, and not picklable (the owner rebuilds it from its configuration).

    Args:
        width: strip width in pixels.
        height: strip height in pixels.
        font_families: family names: the first is the primary font, the others are tried in order for characters it
            lacks (then any other installed font).
        font_size: font size in points.
        dpi: resolution; pixels per em = font_size * dpi / 72.
        x: left edge of the text in pixels.
        extra_font_dirs: font directories to add to the bundled Noto fonts.
    """

    def __init__(
        self,
        width: int,
        height: int,
        font_families: Sequence[str],
        font_size: float,
        dpi: float,
        x: int,
        extra_font_dirs: Sequence[str] = (),
    ) -> None:
        self.width = width
        self.height = height
        self.x = x
        self._font_map = private_font_map(dpi, extra_font_dirs)
        self._check_families(font_families, extra_font_dirs)
        self._context = pango_ffi.gc(pango.pango_font_map_create_context(self._font_map), gobject.g_object_unref)
        font_options = cairocffi.FontOptions(
            antialias=cairocffi.ANTIALIAS_GRAY,
            hint_style=cairocffi.HINT_STYLE_SLIGHT,
            hint_metrics=cairocffi.HINT_METRICS_ON,
        )
        # Pango keeps a copy of the options.
        pangocairo.pango_cairo_context_set_font_options(
            self._context, pangocairo_ffi.cast("cairo_font_options_t *", font_options._pointer)
        )
        pango.pango_context_set_language(self._context, pango.pango_language_from_string(b"xx"))
        pango.pango_context_set_round_glyph_positions(self._context, True)
        description = pango_ffi.gc(pango.pango_font_description_new(), pango.pango_font_description_free)
        pango.pango_font_description_set_family(description, ",".join(font_families).encode("utf-8"))
        pango.pango_font_description_set_size(description, round(font_size * PANGO_SCALE))
        self._layout = pango_ffi.gc(pango.pango_layout_new(self._context), gobject.g_object_unref)
        pango.pango_layout_set_font_description(self._layout, description)  # the layout keeps a copy
        pango.pango_layout_set_single_paragraph_mode(self._layout, True)  # a stray line separator cannot add a line
        self._ink_rect = pango_ffi.new("PangoRectangle *")
        self._logical_rect = pango_ffi.new("PangoRectangle *")
        self._surface = cairocffi.ImageSurface(cairocffi.FORMAT_A8, width, height)
        self._cairo = cairocffi.Context(self._surface)
        self._cairo_pointer = pangocairo_ffi.cast("cairo_t *", self._cairo._pointer)
        rows = np.ndarray((height, self._surface.get_stride()), dtype=np.uint8, buffer=self._surface.get_data())
        self._rows = rows
        self._coverage = rows[:, :width]
        self._inked_width = width
        self._lay_out("")
        ascent = -self._logical_rect.y
        descent = self._logical_rect.height - ascent
        self.baseline = (height + ascent - descent) // 2

    def _check_families(self, requested: Sequence[str], extra_font_dirs: Sequence[str]) -> None:
        for family in requested:
            if not family or "," in family:
                raise ValueError(f"font family {family!r} is not a single family name (empty, or contains a comma).")
        available = font_families(self._font_map)
        missing = [family for family in requested if family not in available]
        if missing:
            raise ValueError(
                f"font families {missing} are not installed in the renderer's private font set (font_dirs="
                f"{list(extra_font_dirs)}). Available: {available}. Add the font's directory with font_dirs=[...]."
            )

    def _lay_out(self, text: str):
        """Set ``text`` on the layout and return its (only) line; fills the line's pixel extents."""
        data = text.encode("utf-8")
        pango.pango_layout_set_text(self._layout, data, len(data))
        line = pango.pango_layout_get_line_readonly(self._layout, 0)
        pango.pango_layout_line_get_pixel_extents(line, self._ink_rect, self._logical_rect)
        return line

    def draw(self, text: str) -> tuple[np.ndarray, int]:
        """Draw ``text`` (valid Unicode, no lone surrogates) and return the coverage and the logical width in pixels.

        The coverage array is a view of the canvas, overwritten by the next call: copy what you keep. Only the columns
        the previous text may have inked are cleared, so a short text after a long one costs little on a wide strip.
        """
        length = self.width // 2
        while True:
            cut = len(text) > length
            line = self._lay_out(text[:length] if cut else text)
            if not cut or self.x + self._logical_rect.width >= self.width + CUT_MARGIN_PX:
                break
            length *= 2
        self._rows[:, : self._inked_width] = 0
        self._surface.mark_dirty()
        left = self.x - self._logical_rect.x
        self._cairo.move_to(left, self.baseline)
        pangocairo.pango_cairo_show_layout_line(self._cairo_pointer, line)
        self._surface.flush()
        right = left + max(self._ink_rect.x + self._ink_rect.width, self._logical_rect.x + self._logical_rect.width)
        self._inked_width = min(self.width, max(right, 0) + INK_MARGIN_PX)
        return self._coverage, self._logical_rect.width
