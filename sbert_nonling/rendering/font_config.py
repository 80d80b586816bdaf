"""A private fontconfig over the pip-installed Noto fonts, so text renders the same on every machine: a ``fonts.conf``
listing only the font packages' directories, loaded into a fontconfig configuration and a Pango font map of its own
(the system's fonts and rules, and the process-wide configuration, are left alone). See docs/pixel_renderer.md,
"Fonts and reproducibility"."""

from __future__ import annotations

import ctypes.util
import functools
import hashlib
import importlib.metadata
import importlib.resources
import os
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from cffi import FFI
from pangocairocffi import ffi as pangocairo_ffi
from pangocairocffi import pangocairo
from pangocffi import ffi as pango_ffi
from pangocffi import glib, gobject, pango

# (distribution, import package, folder inside the package holding the font files)
BUNDLED_FONT_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("fontpkg-noto-sans", "fontpkg_noto_sans", "files"),
    ("fontpkg-noto-sans-arabic", "fontpkg_noto_sans_arabic", "files"),
    ("fontpkg-noto-sans-devanagari", "fontpkg_noto_sans_devanagari", "files"),
    ("noto-cjk-sans-otc", "noto_cjk_sans_otc", ""),
)

_native_ffi = FFI()
_native_ffi.cdef(
    """
    typedef struct _FcConfig FcConfig;
    typedef struct _FcPattern FcPattern;
    typedef struct _FcObjectSet FcObjectSet;
    typedef struct { int nfont; int sfont; FcPattern **fonts; } FcFontSet;
    FcConfig *FcConfigCreate(void);
    int FcConfigParseAndLoad(FcConfig *config, const unsigned char *file, int complain);
    int FcConfigBuildFonts(FcConfig *config);
    FcPattern *FcPatternCreate(void);
    int FcPatternAddString(FcPattern *p, const char *object, const unsigned char *s);
    int FcPatternGetString(const FcPattern *p, const char *object, int n, unsigned char **s);
    int FcPatternGetInteger(const FcPattern *p, const char *object, int n, int *i);
    void FcPatternDestroy(FcPattern *p);
    FcObjectSet *FcObjectSetCreate(void);
    int FcObjectSetAdd(FcObjectSet *os, const char *object);
    void FcObjectSetDestroy(FcObjectSet *os);
    FcFontSet *FcFontList(FcConfig *config, FcPattern *p, FcObjectSet *os);
    void FcFontSetDestroy(FcFontSet *s);
    int FcGetVersion(void);
    void pango_fc_font_map_set_config(void *fontmap, FcConfig *config);
    """
)
_fontconfig = _native_ffi.dlopen(ctypes.util.find_library("fontconfig") or "libfontconfig.so.1")
_pangoft2 = _native_ffi.dlopen(ctypes.util.find_library("pangoft2-1.0") or "libpangoft2-1.0.so.0")


def bundled_font_dirs() -> tuple[str, ...]:
    """The directories of the pip font packages, found through the installed packages themselves."""
    return tuple(
        str(importlib.resources.files(package).joinpath(folder)) for _, package, folder in BUNDLED_FONT_PACKAGES
    )


def fonts_conf_text(font_dirs: Sequence[str], cache_dir: str) -> str:
    """A minimal fonts.conf: the given font directories, one cache directory, and no rules.

    Args:
        font_dirs: the directories fontconfig reads fonts from.
        cache_dir: the directory of fontconfig's cache.
    """
    dirs = "".join(f"  <dir>{escape(directory)}</dir>\n" for directory in font_dirs)
    return (
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n<fontconfig>\n'
        f"{dirs}  <cachedir>{escape(cache_dir)}</cachedir>\n</fontconfig>\n"
    )


def write_fonts_conf(font_dirs: Sequence[str]) -> Path:
    """Write (once) the fonts.conf for ``font_dirs`` under the user cache directory and return its path.

    Args:
        font_dirs: the directories fontconfig reads fonts from.
    """
    versions = [f"{name}=={importlib.metadata.version(name)}" for name, _, _ in BUNDLED_FONT_PACKAGES]
    key = hashlib.sha256("\n".join([*font_dirs, *versions]).encode("utf-8")).hexdigest()[:16]
    cache_root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache_root / "sbert-nonling" / "fontconfig" / key
    conf_path = folder / "fonts.conf"
    text = fonts_conf_text(font_dirs, str(folder / "cache"))
    if not conf_path.is_file() or conf_path.read_text(encoding="utf-8") != text:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"fonts.conf.{os.getpid()}"
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, conf_path)  # atomic: concurrent processes never read half a file
    return conf_path


@functools.cache
def _fontconfig_config(font_dirs: tuple[str, ...]):
    """One fontconfig configuration per set of directories, for the life of the process."""
    for directory in font_dirs:
        if not Path(directory).is_dir():
            raise ValueError(f"font directory {directory!r} does not exist.")
    conf_path = write_fonts_conf(font_dirs)
    config = _fontconfig.FcConfigCreate()
    if not _fontconfig.FcConfigParseAndLoad(config, str(conf_path).encode("utf-8"), 1):
        raise RuntimeError(f"fontconfig could not load {conf_path}.")
    if not _fontconfig.FcConfigBuildFonts(config):
        raise RuntimeError(f"fontconfig could not scan the fonts listed in {conf_path}.")
    return config


def _font_config_for(extra_font_dirs: Sequence[str]):
    return _fontconfig_config(bundled_font_dirs() + tuple(str(Path(d).resolve()) for d in extra_font_dirs))


def private_font_map(dpi: float, extra_font_dirs: Sequence[str] = ()):
    """A new PangoCairo font map (``PangoFontMap *``, released when garbage-collected) that sees only the bundled
    fonts (and ``extra_font_dirs``), at ``dpi``.

    Args:
        dpi: the resolution the font map renders at.
        extra_font_dirs: font directories to add to the bundled Noto fonts.
    """
    config = _font_config_for(extra_font_dirs)
    font_map = pango_ffi.gc(pangocairo.pango_cairo_font_map_new(), gobject.g_object_unref)
    _pangoft2.pango_fc_font_map_set_config(
        _native_ffi.cast("void *", int(pango_ffi.cast("uintptr_t", font_map))), config
    )
    pangocairo.pango_cairo_font_map_set_resolution(pangocairo_ffi.cast("PangoCairoFontMap *", font_map), dpi)
    return font_map


def font_families(font_map) -> list[str]:
    """The family names a font map offers, sorted (Pango adds the aliases Sans, Serif, Monospace, System-ui).

    Args:
        font_map: a ``PangoFontMap *`` (:func:`private_font_map`).
    """
    families = pango_ffi.new("PangoFontFamily ***")
    count = pango_ffi.new("int *")
    pango.pango_font_map_list_families(font_map, families, count)
    names = sorted(
        pango_ffi.string(pango.pango_font_family_get_name(families[0][i])).decode() for i in range(count[0])
    )
    glib.g_free(families[0])
    return names


def fontconfig_version() -> str:
    """The version of the fontconfig library loaded, e.g. ``"2.14.1"``."""
    major, rest = divmod(_fontconfig.FcGetVersion(), 10000)
    return f"{major}.{rest // 100}.{rest % 100}"


def font_file_versions(families: Sequence[str], extra_font_dirs: Sequence[str] = ()) -> dict[str, dict[str, str]]:
    """For each family, the font files of the private font set that provide it (file name without folder) and
    their version (the ``head`` table's fontRevision, as fontconfig reports it, e.g. ``"2.015"``).

    Args:
        families: the font family names.
        extra_font_dirs: font directories to add to the bundled Noto fonts.
    """
    config = _font_config_for(extra_font_dirs)
    objects = _native_ffi.gc(_fontconfig.FcObjectSetCreate(), _fontconfig.FcObjectSetDestroy)
    for name in (b"file", b"fontversion"):
        _fontconfig.FcObjectSetAdd(objects, name)
    file_name = _native_ffi.new("unsigned char **")
    version = _native_ffi.new("int *")
    versions = {}
    for family in families:
        pattern = _native_ffi.gc(_fontconfig.FcPatternCreate(), _fontconfig.FcPatternDestroy)
        _fontconfig.FcPatternAddString(pattern, b"family", family.encode("utf-8"))
        fonts = _native_ffi.gc(_fontconfig.FcFontList(config, pattern, objects), _fontconfig.FcFontSetDestroy)
        files = {}
        for index in range(fonts.nfont):
            font = fonts.fonts[index]
            if _fontconfig.FcPatternGetString(font, b"file", 0, file_name) == 0:  # FcResultMatch
                found = _fontconfig.FcPatternGetInteger(font, b"fontversion", 0, version) == 0
                path = _native_ffi.string(file_name[0]).decode("utf-8", "surrogateescape")
                files[Path(path).name] = f"{version[0] / 65536:.3f}" if found else "unknown"
        versions[family] = dict(sorted(files.items()))
    return versions
