"""PixelRenderer: text -> one strip of 16x16 patches, exactly as PIXEL's own renderer draws it
(Team-PIXEL/pixel-base)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from PIL import Image
from sentence_transformers.base.modules import InputModule
from sentence_transformers.util import load_dir_path

from sbert_nonling.util.validation import replace_lone_surrogates

if TYPE_CHECKING:
    from sbert_nonling.rendering import TextLineCanvas

logger = logging.getLogger(__name__)

# Noto Sans CJK JP is the face fontconfig picks first from the CJK collection for a "Noto Sans" text without a CJK
# language preference, i.e. what PIXEL's renderer draws with these font files (its Han shapes differ from SC's).
DEFAULT_FALLBACK_FONTS = ("Noto Sans Arabic", "Noto Sans Devanagari", "Noto Sans CJK JP")


def sanitize_text(text: str) -> str:
    """The text the renderer hands to Pango: PIXEL's cleaning (each ``\\n`` replaced by a space), every U+0000 removed
    (Pango gets a C string) and every unpaired surrogate replaced by U+FFFD; everything else goes to Pango unchanged
    (a tab advances to Pango's next tab stop, ``\r`` and U+2028 start a second line).

    Args:
        text: the text to render.
    """
    return replace_lone_surrogates(text.replace("\n", " ").replace("\x00", ""))


class PixelRenderer(InputModule):
    """Renders text as PIXEL reads it: one grayscale strip, ``patch_size`` pixels high, of ``max_patches`` patches,
    drawn exactly as PIXEL's own ``PangoCairoTextRenderer`` draws a single text (Rust et al., 2023, "Language
    Modelling with Pixels"; Team-PIXEL/pixel-base was pretrained on its renders).

    Contract: ``preprocess`` reads a list of ``str`` and writes ``pixel_values`` (B, 3, patch_size, max_patches *
    patch_size), float32 in [0, 1], gray on 3 channels, white background; and ``attention_mask`` (B, max_patches):
    1 for the text patches and the end-of-sequence patch. Follow it with :class:`~sbert_nonling.modules.PixelEncoder`.

    Geometry, as PIXEL's: the font is ``dpi / 72 * font_size`` px; the whole text is one Pango layout (never wrapped)
    with its top-left corner at ``(pad_left, patch_size / 2 - height / 2 - 2)``; text beyond the strip is clipped;
    an all-black end-of-sequence patch starts at :meth:`eos_start`. Text handling: :func:`sanitize_text`. Fonts: the
    pip-installed Noto families through a fontconfig of the renderer's own (no system font or rule applies), so
    renders are identical wherever the Pango, Cairo, HarfBuzz, FreeType and fontconfig versions match; those versions
    are recorded on save and compared on load (a warning names any difference). Further reading:
    docs/pixel_renderer.md.
    Needs the ``pixel`` extra and the system's Pango / Cairo libraries (an ImportError names both).

    Args:
        max_patches: patches per strip, the EOS patch included (PIXEL: 529; Pixel Linguist: 64).
        patch_size: patch side and strip height in pixels (16).
        font_size: font size in points (8); the pixel size is ``dpi / 72 * font_size``.
        dpi: rendering resolution (120).
        font_family: primary font family (default "Noto Sans"; PIXEL used "Go Noto Current").
        fallback_fonts: families tried in order for characters the primary font lacks.
        pad_left: left margin in pixels (2); the same margin separates the text from the EOS patch.
        font_dirs: extra font folders, relative ones resolved against ``font_root`` (default: the working directory);
            in a saved config, inside the model folder (or ``SBERT_NONLING_FONT_DIRS``).
        render_environment: the versions a saved model recorded (:func:`sbert_nonling.rendering.render_environment`).
        font_root: the folder relative ``font_dirs`` are resolved against (default: the working directory; a saved
            renderer passes its model folder).

    Example:
        ::

            from sbert_nonling.modules.pixel_renderer import PixelRenderer

            renderer = PixelRenderer(max_patches=64)
            strip, num_patches = renderer.render("A man is playing a guitar.")  # (16, 1024) uint8, 11 patches
            features = renderer.preprocess(["A man is playing a guitar.", "Ein Mann spielt Gitarre."])
            features["pixel_values"].shape  # (2, 3, 16, 1024); features["attention_mask"].shape: (2, 64)
            renderer.save_preview("A man is playing a guitar.", "strip.png", scale=4)
    """

    config_keys: list[str] = [
        "max_patches",
        "patch_size",
        "font_size",
        "dpi",
        "font_family",
        "fallback_fonts",
        "pad_left",
        "font_dirs",
    ]
    config_file_name = "pixel_renderer_config.json"
    save_in_root = False

    def __init__(
        self,
        max_patches: int = 64,
        patch_size: int = 16,
        font_size: float = 8,
        dpi: float = 120,
        font_family: str = "Noto Sans",
        fallback_fonts: Sequence[str] = DEFAULT_FALLBACK_FONTS,
        pad_left: int = 2,
        font_dirs: Sequence[str] = (),
        render_environment: Mapping[str, Any] | None = None,
        font_root: str | os.PathLike | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(font_dirs, (list, tuple)) or not all(
            isinstance(item, (str, os.PathLike)) for item in font_dirs
        ):
            raise ValueError(
                f"font_dirs={font_dirs!r} must be a list of folder names (a string is not read as one folder)."
            )
        if max_patches < 1:
            raise ValueError(f"max_patches={max_patches!r} must be at least 1 (the end-of-sequence patch).")
        if patch_size < 1:
            raise ValueError(f"patch_size={patch_size!r} must be a positive number of pixels.")
        if font_size <= 0 or dpi <= 0:
            raise ValueError(f"font_size={font_size!r} and dpi={dpi!r} must both be positive.")
        if not 0 <= pad_left < max_patches * patch_size:
            raise ValueError(f"pad_left={pad_left!r} must be in [0, {max_patches * patch_size}) pixels.")
        self.max_patches, self.patch_size, self.pad_left = max_patches, patch_size, pad_left
        self.font_family, self.font_size, self.dpi = font_family, font_size, dpi
        self.fallback_fonts = tuple(fallback_fonts)
        self.font_dirs = tuple(str(directory) for directory in font_dirs)
        root = Path.cwd() if font_root is None else Path(font_root)
        # absolute paths stay as they are
        self.font_paths = tuple(str(root / directory) for directory in self.font_dirs)
        self._canvas = self._build_canvas()
        from sbert_nonling.rendering import environment_differences

        differences: list[str] = []
        if render_environment is not None:
            differences = environment_differences(render_environment, self.current_render_environment())
        if differences:
            logger.warning(
                "This PixelRenderer was saved on a machine with other rendering libraries or fonts; renders here may "
                "differ from those the model was trained on by a few pixels: %s.",
                "; ".join(differences),
            )

    def _build_canvas(self) -> TextLineCanvas:
        from sbert_nonling.rendering import TextLineCanvas

        return TextLineCanvas(
            self.strip_width,
            self.patch_size,
            self.font_families,
            self.font_size,
            self.dpi,
            self.pad_left,
            self.font_paths,
        )

    @property
    def font_families(self) -> tuple[str, ...]:
        """The primary font family, then the fallbacks."""
        return (self.font_family, *self.fallback_fonts)

    def current_render_environment(self) -> dict[str, Any]:
        """This machine's rendering library versions and the versions of the font files of :attr:`font_families`."""
        from sbert_nonling.rendering import render_environment

        return render_environment(self.font_families, self.font_paths)

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "render_environment": self.current_render_environment()}

    @classmethod
    def load_config(cls, model_name_or_path: str, subfolder: str = "", *args: Any, **kwargs: Any) -> dict[str, Any]:
        """``Module.load_config`` with the renderer's folder as ``font_root`` and the saved ``font_dirs`` checked (each
        inside the model folder or ``SBERT_NONLING_FONT_DIRS``; a ValueError names the config file otherwise)."""
        config = super().load_config(model_name_or_path, subfolder, *args, **kwargs)
        if config and "render_environment" not in config:
            logger.warning(
                "This PixelRenderer config records no rendering library versions: it was saved by an sbert-nonling "
                "version whose renders differed from PIXEL's (text one pixel lower; tabs, line breaks, control "
                "characters), as the model's may."
            )
        hub_kwargs = {key: value for key, value in kwargs.items() if key != "config_filename"}
        folder = Path(
            load_dir_path(model_name_or_path, subfolder, **hub_kwargs) or Path(model_name_or_path) / subfolder
        )
        depth = len(Path(subfolder).parts)
        model_folder = folder.parents[depth - 1] if depth else folder
        where = folder / cls.config_file_name
        font_dirs = config.get("font_dirs", [])
        if not isinstance(font_dirs, list) or not all(isinstance(item, str) for item in font_dirs):
            raise ValueError(f"{where}: font_dirs={font_dirs!r} must be a list of folder names relative to {folder}.")
        trusted = os.environ.get("SBERT_NONLING_FONT_DIRS", "").split(os.pathsep)
        allowed = [model_folder.resolve(), *(Path(item).resolve() for item in trusted if item)]
        for directory in font_dirs:
            resolved = (folder / directory).resolve()
            if not any(resolved.is_relative_to(root) for root in allowed):
                raise ValueError(
                    f"{where}: font_dirs entry {directory!r} is {resolved}, outside the model folder {model_folder}; "
                    "a saved renderer reads fonts only from inside its model folder. Copy the fonts there (e.g. "
                    "fonts/ beside the config), or list the folder in SBERT_NONLING_FONT_DIRS if you trust it."
                )
            if not resolved.is_dir():
                raise ValueError(f"{where}: font_dirs entry {directory!r} ({resolved}) is not a folder.")
        return {**config, "font_root": folder}

    @property
    def strip_width(self) -> int:
        """Width of the strip in pixels: max_patches * patch_size."""
        return self.max_patches * self.patch_size

    def eos_start(self, text_width: int) -> int:
        """Left edge (pixels) of the EOS patch after a text whose width (Pango's pixel size) is ``text_width``.

        Args:
            text_width: the width of the rendered text, in pixels.
        """
        patches_used = -(-(2 * self.pad_left + text_width) // self.patch_size)  # ceil
        return min(patches_used, self.max_patches - 1) * self.patch_size

    def _render_into(self, text: str, strip: np.ndarray) -> int:
        """Render ``text`` into ``strip`` (patch_size, strip_width) uint8; return the number of attended patches."""
        coverage, text_width = self._canvas.draw(sanitize_text(text))
        eos_start = self.eos_start(text_width)
        np.subtract(255, coverage, out=strip)
        strip[:, eos_start : eos_start + self.patch_size] = 0
        return eos_start // self.patch_size + 1

    def render(self, text: str) -> tuple[np.ndarray, int]:
        """Render one text: the uint8 strip (patch_size, max_patches * patch_size), 255 = white, and the number of
        attended patches (text patches + the EOS patch).

        Args:
            text: the text to render (cleaned by :func:`sanitize_text`).
        """
        if not isinstance(text, str):
            raise ValueError(f"text is a {type(text).__name__} ({text!r}); PixelRenderer renders str only.")
        strip = np.empty((self.patch_size, self.strip_width), dtype=np.uint8)
        return strip, self._render_into(text, strip)

    def preprocess(self, inputs: Sequence[Any], prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        if isinstance(inputs, str):
            raise ValueError("inputs is a single str; pass a list of texts, e.g. [text].")
        texts = list(inputs)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(
                    f"inputs[{index}] is a {type(text).__name__} ({text!r}); PixelRenderer renders str only."
                )
        if prompt:
            texts = self._prepend_prompt(texts, prompt)
        strips = np.empty((len(texts), self.patch_size, self.strip_width), dtype=np.uint8)
        num_patches = torch.tensor(
            [self._render_into(text, strip) for text, strip in zip(texts, strips, strict=True)], dtype=torch.long
        )
        attention_mask = (torch.arange(self.max_patches) < num_patches.unsqueeze(1)).long()
        pixel_values = torch.from_numpy(strips).unsqueeze(1).expand(-1, 3, -1, -1).float().div_(255.0).contiguous()
        return {"pixel_values": pixel_values, "attention_mask": attention_mask}

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        return features

    def save_preview(self, text: str, path: str | Path, scale: int = 1) -> int:
        """Write the strip of ``text`` as a grayscale PNG (``scale`` times larger, nearest neighbour); return the
        number of attended patches.

        Args:
            text: the text to render.
            path: the PNG file to write.
            scale: the magnification, in whole pixels per pixel.
        """
        if scale < 1:
            raise ValueError(f"scale={scale!r} must be a positive integer.")
        strip, num_patches = self.render(text)
        image = Image.fromarray(strip)  # uint8 (H, W): mode "L"
        image.resize((image.width * scale, image.height * scale), Image.Resampling.NEAREST).save(path)
        return num_patches

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_canvas"]  # native Pango / Cairo objects: rebuilt from the configuration
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._canvas = self._build_canvas()

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)


def render_preview(text: str, path: str | Path, scale: int = 1, **renderer_kwargs) -> int:
    """Render ``text`` with ``PixelRenderer(**renderer_kwargs)`` and write it as a PNG to ``path`` (see
    :meth:`PixelRenderer.save_preview`); return the number of attended patches.

    Args:
        text: the text to render.
        path: the PNG file to write.
        scale: the magnification, in whole pixels per pixel.
    """
    return PixelRenderer(**renderer_kwargs).save_preview(text, path, scale=scale)
