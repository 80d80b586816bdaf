"""FrozenCLIP: a frozen CLIP giving image and caption embeddings, the teacher signal of KDMCSE and DALR."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import AutoImageProcessor, AutoTokenizer, CLIPModel

from sbert_nonling.util.frozen import FrozenModule

#: The Hub name of each CLIP a short name stands for (KDMCSE's and DALR's released features are ViT-L/14's).
CLIP_MODELS = {
    "clip-vit-large-patch14": "openai/clip-vit-large-patch14",
    "clip-vit-base-patch32": "openai/clip-vit-base-patch32",
}


def clip_location(name: str) -> str:
    """The Hub name or folder a CLIP name stands for: a short name of :data:`CLIP_MODELS`, a local folder or a Hub
    name (``owner/name``) as it is. A bare name that is none of these (a typo) is one ValueError naming the closest
    short names, before anything is downloaded.

    Args:
        name: e.g. ``"clip-vit-large-patch14"``, ``"openai/clip-vit-base-patch16"`` or a folder.
    """
    if name in CLIP_MODELS:
        return CLIP_MODELS[name]
    if "/" in name or Path(name).exists():
        return name
    close = difflib.get_close_matches(name, list(CLIP_MODELS), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(
        f"Unknown CLIP {name!r}: {hint}Give a short name ({', '.join(CLIP_MODELS)}), a Hub name (owner/name) or a "
        "local CLIP folder."
    )


class FrozenCLIP(FrozenModule):
    """A frozen transformers ``CLIPModel`` (eval mode, no grad) with its image processor and tokenizer: CLIP's
    projected image and text embeddings (``get_image_features`` / ``get_text_features``, not normalised), computed
    once on the data side as the teacher's features. What it adds to ``CLIPModel``: preprocessing of PIL images and
    caption strings in one call, and a module that stays frozen (a
    :class:`~sbert_nonling.util.frozen.FrozenModule`).

    Args:
        model: the CLIP model.
        image_processor: its image processor (resize, crop, normalise).
        tokenizer: its tokenizer.

    Example::

        from PIL import Image
        from sbert_nonling.data.frozen_clip import FrozenCLIP
        from sbert_nonling.models import build_tiny_clip

        # an offline stand-in for "clip-vit-large-patch14": a tiny random CLIP
        clip = FrozenCLIP.from_pretrained(str(build_tiny_clip("tiny-clip", ["a red square"], projection_dim=16)))
        print(clip.encode_texts(["a red square"]).shape, clip.encode_images([Image.new("RGB", (40, 30))]).shape)
    """

    def __init__(self, model: CLIPModel, image_processor: Any, tokenizer: Any) -> None:
        super().__init__()
        self.model: Any = model  # CLIPModel: its config types every field as optional
        self.image_processor = image_processor
        self.tokenizer = tokenizer
        self.freeze()

    @property
    def dimension(self) -> int:
        """The width of CLIP's projected embeddings (768 for ViT-L/14, 512 for ViT-B/32)."""
        return self.model.config.projection_dim

    @torch.no_grad()
    def encode_images(self, images: Sequence[Image.Image]) -> torch.Tensor:
        """CLIP's image embeddings (N, dimension), float32 on the CPU.

        Args:
            images: RGB PIL images.
        """
        device = next(self.model.parameters()).device
        # transformers 5: get_*_features return the projected embeddings as pooler_output
        pixels = self.image_processor(images=list(images), return_tensors="pt")["pixel_values"].to(device)
        return self.model.get_image_features(pixel_values=pixels).pooler_output.float().cpu()

    @torch.no_grad()
    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """CLIP's text embeddings (N, dimension), float32 on the CPU; texts longer than CLIP's context are cut.

        Args:
            texts: the captions.
        """
        device = next(self.model.parameters()).device
        context = self.model.config.text_config.max_position_embeddings
        tokens = self.tokenizer(list(texts), padding=True, truncation=True, max_length=context, return_tensors="pt")
        output = self.model.get_text_features(
            input_ids=tokens["input_ids"].to(device), attention_mask=tokens["attention_mask"].to(device)
        )
        return output.pooler_output.float().cpu()

    @classmethod
    def from_pretrained(cls, name: str) -> FrozenCLIP:
        """The CLIP named ``name``: a short name of :data:`CLIP_MODELS`, a Hub name or a local folder holding a
        ``CLIPModel`` with its image processor and tokenizer.

        Args:
            name: e.g. ``"clip-vit-large-patch14"`` or ``"openai/clip-vit-base-patch16"``.
        """
        path = clip_location(name)
        return cls(
            CLIPModel.from_pretrained(path),
            AutoImageProcessor.from_pretrained(path),
            AutoTokenizer.from_pretrained(path),
        )
