"""The versions of the native libraries and font files a render depends on, which a
:class:`~sbert_nonling.modules.pixel_renderer.PixelRenderer` records on save and compares on load."""

from __future__ import annotations

import ctypes.util
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import cairocffi
from cffi import FFI
from pangocffi import pango_version_string

from sbert_nonling.rendering.font_config import font_file_versions, fontconfig_version

_native_ffi = FFI()
_native_ffi.cdef(
    """
    typedef struct FT_LibraryRec_ *FT_Library;
    int FT_Init_FreeType(FT_Library *library);
    void FT_Library_Version(FT_Library library, int *major, int *minor, int *patch);
    int FT_Done_FreeType(FT_Library library);
    const char *hb_version_string(void);
    """
)


def _freetype_version() -> str:
    freetype = _native_ffi.dlopen(ctypes.util.find_library("freetype") or "libfreetype.so.6")
    library = _native_ffi.new("FT_Library *")
    if freetype.FT_Init_FreeType(library) != 0:
        return "unknown"
    version = _native_ffi.new("int[3]")
    freetype.FT_Library_Version(library[0], version, version + 1, version + 2)
    freetype.FT_Done_FreeType(library[0])
    return ".".join(str(part) for part in version)


def _harfbuzz_version() -> str:
    harfbuzz = _native_ffi.dlopen(ctypes.util.find_library("harfbuzz") or "libharfbuzz.so.0")
    return _native_ffi.string(harfbuzz.hb_version_string()).decode("ascii")


@functools.cache
def library_versions() -> dict[str, str]:
    """The versions of the rendering libraries this process loads (Pango, Cairo, HarfBuzz, FreeType, fontconfig)."""
    return {
        "pango": pango_version_string(),
        "cairo": cairocffi.cairo_version_string(),
        "harfbuzz": _harfbuzz_version(),
        "freetype": _freetype_version(),
        "fontconfig": fontconfig_version(),
    }


def render_environment(font_families: Sequence[str], extra_font_dirs: Sequence[str] = ()) -> dict[str, Any]:
    """This machine's rendering environment for a renderer using ``font_families``: ``{"libraries": {name:
    version}, "fonts": {family: {font file name: font version}}}``.

    Args:
        font_families: the renderer's font families (primary, then fallbacks).
        extra_font_dirs: font directories the renderer adds to the bundled Noto fonts.
    """
    return {"libraries": library_versions(), "fonts": font_file_versions(font_families, extra_font_dirs)}


def environment_differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between a recorded and the current rendering environment, one readable line per library or
    font family (empty when they match).

    Args:
        recorded: the environment a saved renderer recorded (:func:`render_environment`).
        current: this machine's.
    """
    differences = []
    for section in ("libraries", "fonts"):
        recorded_section, current_section = recorded.get(section, {}), current.get(section, {})
        for name in sorted(set(recorded_section) | set(current_section)):
            before, now = recorded_section.get(name), current_section.get(name)
            if before != now:
                differences.append(f"{name}: saved with {before}, this machine has {now}")
    return differences
