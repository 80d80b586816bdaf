"""TextLineCanvas: draws a text with Pango into an 8-bit Cairo strip the way PIXEL's renderer does, reusing one
layout for every text."""

from __future__ import annotations

from collections.abc import Sequence

import cairocffi
import numpy as np
from pangocairocffi import ffi as pangocairo_ffi
from pangocairocffi import pangocairo
from pangocffi import ffi as pango_ffi
from pangocffi import gobject, pango

from sbert_nonling.rendering.font_config import font_families as rendering_font_families
from sbert_nonling.rendering.font_config import private_font_map

# PIXEL draws every text this many pixels above the vertical centre of the strip.
PIXEL_LIFT_PX = 2


def font_description_string(font_size: float, dpi: float) -> str:
    """PIXEL's font size as Pango reads it: ``"<dpi / 72 * font_size>px"`` (an absolute size, 13.333...px at 8 pt
    and 120 dpi), written exactly as PIXEL writes it so Pango rounds it to the same 1/1024 px.

    Args:
        font_size: font size in points.
        dpi: resolution in dots per inch.
    """
    return f"{(dpi / 72) * font_size}px"


class TextLineCanvas:
    """Draws a text into a ``height`` x ``width`` strip of ink coverage (0 = none, 255 = full ink), placed as PIXEL's
    ``PangoCairoTextRenderer`` places it (Rust et al., 2023, "Language Modelling with Pixels").

    One Pango layout on a private font map (:mod:`sbert_nonling.rendering.font_config`) and one Cairo A8 surface,
    reused for every text; the layout's top-left corner goes to ``(x, height_of_strip / 2 - height / 2 - 2)`` with
    ``(width, height)`` its pixel size, and the rendering settings are fixed (docs/pixel_renderer.md, "Geometry").
    Not thread-safe, and not picklable (the owner rebuilds it from its configuration).

    Args:
        width: strip width in pixels.
        height: strip height in pixels.
        font_families: the primary font family, then the fallbacks tried in order.
        font_size: font size in points.
        dpi: resolution; pixels per em = dpi / 72 * font_size.
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
        self.width, self.height, self.x = width, height, x
        self._font_map = private_font_map(dpi, extra_font_dirs)
        for family in font_families:
            if not family or "," in family:
                raise ValueError(f"font family {family!r} is not a single family name (empty, or contains a comma).")
        available = rendering_font_families(self._font_map)
        missing = [family for family in font_families if family not in available]
        if missing:
            raise ValueError(
                f"font families {missing} are not installed in the renderer's private font set (font_dirs="
                f"{list(extra_font_dirs)}). Available: {available}. Add the font's directory with font_dirs=[...]."
            )
        self._context = pango_ffi.gc(pango.pango_font_map_create_context(self._font_map), gobject.g_object_unref)
        options = cairocffi.FontOptions(
            antialias=cairocffi.ANTIALIAS_GRAY,
            hint_style=cairocffi.HINT_STYLE_SLIGHT,
            hint_metrics=cairocffi.HINT_METRICS_ON,
        )
        # Pango keeps a copy of the options.
        pangocairo.pango_cairo_context_set_font_options(
            self._context, pangocairo_ffi.cast("cairo_font_options_t *", options._pointer)
        )
        pango.pango_context_set_language(self._context, pango.pango_language_from_string(b"xx"))
        pango.pango_context_set_round_glyph_positions(self._context, True)
        description = pango_ffi.gc(
            pango.pango_font_description_from_string(font_description_string(font_size, dpi).encode("ascii")),
            pango.pango_font_description_free,
        )
        pango.pango_font_description_set_family(description, ",".join(font_families).encode("utf-8"))
        self._layout = pango_ffi.gc(pango.pango_layout_new(self._context), gobject.g_object_unref)
        pango.pango_layout_set_font_description(self._layout, description)  # the layout keeps a copy
        self._size = pango_ffi.new("int[2]")
        self._surface = cairocffi.ImageSurface(cairocffi.FORMAT_A8, width, height)
        self._cairo = cairocffi.Context(self._surface)
        self._cairo_pointer = pangocairo_ffi.cast("cairo_t *", self._cairo._pointer)
        self._rows = np.ndarray((height, self._surface.get_stride()), dtype=np.uint8, buffer=self._surface.get_data())
        self._coverage = self._rows[:, :width]

    def draw(self, text: str) -> tuple[np.ndarray, int]:
        """Draw ``text``; return the coverage (a view of the canvas, overwritten by the next call) and the text's
        logical width in pixels.

        Args:
            text: the text, without lone surrogates or U+0000
                (:func:`~sbert_nonling.modules.pixel_renderer.sanitize_text` makes it so).
        """
        data = text.encode("utf-8")
        pango.pango_layout_set_text(self._layout, data, len(data))
        pango.pango_layout_get_pixel_size(self._layout, self._size, self._size + 1)
        text_width, text_height = self._size[0], self._size[1]
        self._rows[:] = 0
        self._surface.mark_dirty()
        self._cairo.move_to(self.x, self.height / 2 - text_height / 2 - PIXEL_LIFT_PX)
        pangocairo.pango_cairo_show_layout(self._cairo_pointer, self._layout)
        self._surface.flush()
        return self._coverage, text_width
