"""PixelRenderer: text -> one strip of 16x16 patches, rendered through Pango the way PIXEL (Team-PIXEL/pixel-base) does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from sentence_transformers.base.modules import InputModule

from sbert_nonling.rendering import TextLineCanvas
from sbert_nonling.util.validation import replace_lone_surrogates

DEFAULT_FALLBACK_FONTS = ("Noto Sans Arabic", "Noto Sans Devanagari", "Noto Sans CJK SC")

# Tabs and every line or paragraph break become a space; the remaining C0 / C1 control characters are dropped.
_BREAKS = "\t\n\v\f\r\x1c\x1d\x1e\x1f\x85\u2028\u2029"
_SANITIZE_TABLE = {code: None for code in (*range(0x20), *range(0x7F, 0xA0))} | {ord(c): " " for c in _BREAKS}


def sanitize_text(text: str) -> str:
    """The text the renderer draws for ``text``.

    Tabs and line / paragraph breaks (``\\n``, ``\\r``, ``\\v``, ``\\f``, U+001C-U+001F, U+0085, U+2028, U+2029)
    become one space each; the other C0 and C1 control characters (U+0000-U+001F, U+007F-U+009F) are removed;
    unpaired surrogates become U+FFFD (a surrogate pair written as two code points is joined into one character).
    Everything else, including format characters such as U+200B, is left to Pango.
    """
    return replace_lone_surrogates(text.translate(_SANITIZE_TABLE))


class PixelRenderer(InputModule):
    """Renders text as PIXEL reads it: one grayscale strip, ``patch_size`` pixels high, of ``max_patches`` patches.

    Contract: ``preprocess`` reads a list of ``str`` and writes ``pixel_values`` (B, 3, patch_size,
    max_patches * patch_size), float32 in [0, 1], the gray strip repeated on 3 channels, white background (1.0),
    black text, not normalised; and ``attention_mask`` (B, max_patches), long: 1 for the text patches and the
    end-of-sequence patch, 0 after (patches only: the encoder prepends its [CLS]). ``forward`` returns the features
    unchanged. Follow it with the PIXEL encoder (``sbert_nonling.modules.pixel_encoder``).

    Geometry (PIXEL's, as in Team-PIXEL/pixel-base): text at ``font_size`` pt and ``dpi`` (8 pt at 120 dpi =
    13.33 px), one line, no wrapping, starting at x = ``pad_left``, vertically centred (the primary font's line box
    is centred; the baseline is the same for every text). Right-to-left scripts are shaped and ordered by Pango.
    After the text, at the next patch boundary, comes an all-black end-of-sequence (EOS) patch:
    ``eos_start = min(ceil((pad_left + width + pad_left) / patch_size) * patch_size, (max_patches - 1) * patch_size)``
    where ``width`` is the line's logical width; everything after it is white. Text that does not fit is cut, so the
    EOS patch always stays (in the last patch). An empty text gives only the EOS patch, at patch 0.

    Text handling: see :func:`sanitize_text` (breaks and tabs -> spaces, control characters removed, lone
    surrogates -> U+FFFD). Characters no installed font covers, including emoji (no emoji font is bundled), are
    drawn as visible hex boxes.

    Fonts and reproducibility: PIXEL rendered with GoNotoCurrent, which no package installs. The default here is
    Noto Sans with Noto Sans Arabic, Noto Sans Devanagari and Noto Sans CJK SC as fallbacks, all from pip packages,
    seen through a private fontconfig that ignores the system's fonts and rules
    (:mod:`sbert_nonling.rendering.font_config`), with fixed antialiasing and hinting: renders are byte-identical
    on any machine with the same Pango, Cairo, FreeType and HarfBuzz libraries. To render with GoNotoCurrent, pass
    its folder in ``font_dirs`` and ``font_family="Go Noto Current"``. STS results of PIXEL models are sensitive to
    the font (users report ~73 instead of 77.78 on STS-B with a different one).

    Args:
        max_patches: patches per strip, the EOS patch included (PIXEL: 529; Pixel Linguist: 64).
        patch_size: patch side and strip height in pixels (16).
        font_size: font size in points (8).
        dpi: rendering resolution (120).
        font_family: primary font family (default "Noto Sans"; PIXEL used "Go Noto Current").
        fallback_fonts: families tried in order for characters the primary font lacks.
        pad_left: left margin in pixels (2); the same margin separates the text from the EOS patch.
        font_dirs: extra font directories (e.g. one holding GoNotoCurrent.ttf), added to the bundled Noto fonts.

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
    ) -> None:
        super().__init__()
        if max_patches < 1:
            raise ValueError(f"max_patches={max_patches!r} must be at least 1 (the end-of-sequence patch).")
        if patch_size < 1:
            raise ValueError(f"patch_size={patch_size!r} must be a positive number of pixels.")
        if font_size <= 0 or dpi <= 0:
            raise ValueError(f"font_size={font_size!r} and dpi={dpi!r} must both be positive.")
        if not 0 <= pad_left < max_patches * patch_size:
            raise ValueError(f"pad_left={pad_left!r} must be in [0, {max_patches * patch_size}) pixels.")
        self.max_patches = max_patches
        self.patch_size = patch_size
        self.font_size = font_size
        self.dpi = dpi
        self.font_family = font_family
        self.fallback_fonts = tuple(fallback_fonts)
        self.pad_left = pad_left
        self.font_dirs = tuple(str(directory) for directory in font_dirs)
        self._canvas = self._build_canvas()

    def _build_canvas(self) -> TextLineCanvas:
        return TextLineCanvas(
            width=self.strip_width,
            height=self.patch_size,
            font_families=(self.font_family, *self.fallback_fonts),
            font_size=self.font_size,
            dpi=self.dpi,
            x=self.pad_left,
            extra_font_dirs=self.font_dirs,
        )

    @property
    def strip_width(self) -> int:
        """Width of the strip in pixels: max_patches * patch_size."""
        return self.max_patches * self.patch_size

    def eos_start(self, text_width: int) -> int:
        """Left edge (pixels) of the EOS patch after a text whose logical width is ``text_width`` pixels."""
        patches_used = -(-(2 * self.pad_left + text_width) // self.patch_size)  # ceil
        return min(patches_used, self.max_patches - 1) * self.patch_size

    def _render_into(self, text: str, strip: np.ndarray) -> int:
        """Render ``text`` into ``strip`` (patch_size, strip_width) uint8; return the number of attended patches."""
        text = sanitize_text(text)
        coverage, text_width = self._canvas.draw(text)
        eos_start = self.eos_start(text_width) if text else 0
        eos_end = eos_start + self.patch_size
        np.subtract(255, coverage[:, :eos_start], out=strip[:, :eos_start])
        strip[:, eos_start:eos_end] = 0
        strip[:, eos_end:] = 255
        return eos_start // self.patch_size + 1

    def render(self, text: str) -> tuple[np.ndarray, int]:
        """Render one text: the uint8 strip (patch_size, max_patches * patch_size), 255 = white, and the number of
        attended patches (text patches + the EOS patch)."""
        if not isinstance(text, str):
            raise ValueError(f"text is a {type(text).__name__} ({text!r}); PixelRenderer renders str only.")
        strip = np.empty((self.patch_size, self.strip_width), dtype=np.uint8)
        return strip, self._render_into(text, strip)

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        if isinstance(inputs, str):
            raise ValueError("inputs is a single str; pass a list of texts, e.g. [text].")
        texts = list(inputs)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"inputs[{index}] is a {type(text).__name__} ({text!r}); PixelRenderer renders str only.")
        if prompt:
            texts = self._prepend_prompt(texts, prompt)
        strips = np.empty((len(texts), self.patch_size, self.strip_width), dtype=np.uint8)
        rendered = zip(texts, strips, strict=True)
        num_patches = torch.tensor([self._render_into(text, strip) for text, strip in rendered], dtype=torch.long)
        attention_mask = (torch.arange(self.max_patches) < num_patches.unsqueeze(1)).long()
        pixel_values = torch.from_numpy(strips).unsqueeze(1).expand(-1, 3, -1, -1).float().div_(255.0).contiguous()
        return {"pixel_values": pixel_values, "attention_mask": attention_mask}

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        return features

    def save_preview(self, text: str, path: str | Path, scale: int = 1) -> int:
        """Write the strip of ``text`` as a grayscale PNG (``scale`` times larger, nearest neighbour); return the
        number of attended patches."""
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
    :meth:`PixelRenderer.save_preview`); return the number of attended patches."""
    return PixelRenderer(**renderer_kwargs).save_preview(text, path, scale=scale)
