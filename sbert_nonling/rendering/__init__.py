"""Text rendering internals of :class:`~sbert_nonling.modules.pixel_renderer.PixelRenderer`: a private fontconfig
over the pip-installed Noto fonts (``font_config``), a reusable Pango/Cairo canvas placing text as PIXEL does
(``text_line``) and the record of library and font versions renders depend on (``environment``).

Needs the ``pixel`` extra (``pip install 'sbert-nonling[pixel]'``) and the system's Pango and Cairo libraries;
importing this package without them raises an ImportError that names both.
"""

from __future__ import annotations

from sbert_nonling.util.optional import require_extra

require_extra("pixel", "Rendering text as pixels (PixelRenderer, the pixel route)")

from sbert_nonling.rendering.environment import environment_differences, library_versions, render_environment  # noqa: E402
from sbert_nonling.rendering.font_config import (  # noqa: E402
    BUNDLED_FONT_PACKAGES,
    bundled_font_dirs,
    font_families,
    font_file_versions,
    private_font_map,
)
from sbert_nonling.rendering.text_line import TextLineCanvas  # noqa: E402

__all__ = [
    "BUNDLED_FONT_PACKAGES",
    "TextLineCanvas",
    "bundled_font_dirs",
    "environment_differences",
    "font_families",
    "font_file_versions",
    "library_versions",
    "private_font_map",
    "render_environment",
]
