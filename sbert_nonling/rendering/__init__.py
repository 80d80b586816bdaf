"""Text rendering internals of :class:`~sbert_nonling.modules.pixel_renderer.PixelRenderer`: a private fontconfig
over the pip-installed Noto fonts (``font_config``) and a reusable Pango/Cairo one-line canvas (``text_line``)."""

from __future__ import annotations

from sbert_nonling.rendering.font_config import (
    BUNDLED_FONT_PACKAGES,
    bundled_font_dirs,
    font_families,
    private_font_map,
)
from sbert_nonling.rendering.text_line import TextLineCanvas

__all__ = ["BUNDLED_FONT_PACKAGES", "TextLineCanvas", "bundled_font_dirs", "font_families", "private_font_map"]
