"""Text rendering internals of :class:`~sbert_nonling.modules.pixel_renderer.PixelRenderer` (private fontconfig,
Pango / Cairo canvas, library and font versions). Needs the ``pixel`` extra and the system's Pango and Cairo
libraries."""

from __future__ import annotations

from sbert_nonling.util.optional import require_extra

require_extra("pixel", "Rendering text as pixels (PixelRenderer, the pixel route)")

from sbert_nonling.rendering.environment import (  # noqa: E402
    environment_differences,
    library_versions,
    render_environment,
)
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
