"""ImagePatchEmbed: ViT-style patch tokens from images, for the "image" route of a ModalityRouter."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch
from sentence_transformers.base.modality_types import Modality
from torchvision.transforms import v2

from sbert_nonling.data.decoding import IMAGENET_MEAN, IMAGENET_STD, to_rgb_image
from sbert_nonling.modules.front_end import MAX_TOKENS, FrontEnd
from sbert_nonling.modules.patch_tokens import PatchTokens
from sbert_nonling.util.choices import EncoderEntry

logger = logging.getLogger(__name__)


class ImagePatchEmbed(FrontEnd):
    """Turns images into ViT patch tokens for the shared encoder (VisualCSE's image front-end).

    Contract: ``preprocess`` reads PIL images, ``(H, W[, C])`` / ``(C, H, W)`` arrays or normalised ``(3, H, W)`` float
    tensors and writes ``pixel_values`` (B, 3, image_size, image_size): RGB, resized, centre-cropped, normalised.
    ``forward`` turns them into ViT tokens (:class:`~sbert_nonling.modules.patch_tokens.PatchTokens`: [CLS] + one token
    per ``patch_size`` square, with learned positions) and hands them on
    (:meth:`~sbert_nonling.modules.front_end.FrontEnd.hand_off`). :meth:`from_vit` copies a ViT checkpoint's embeddings
    (the paper: ``google/vit-base-patch16-224-in21k``). A lower ``image_size`` (112 of 224: a quarter of the tokens)
    and patch dropout (``token_keep_ratio``) make image steps cheaper; docs/visualcse.md measures both.

    Args:
        image_size: square input size in pixels (224).
        patch_size: patch side (16): 224 / 16 -> 196 patches + [CLS] = 197 tokens.
        num_channels: input channels (3).
        embedding_dimension: token width, the encoder's hidden size; None: the encoder's, taken when placed before it.
        encoder_entry: ``"bypass"`` (straight into the encoder layers, VisualCSE's released code) or ``"embeddings"``
            (through the encoder's embedding layer).
        image_mean: per-channel normalisation mean (ImageNet's).
        image_std: per-channel normalisation standard deviation (ImageNet's).
        token_keep_ratio: share of the patch tokens kept in training (patch dropout); 1.0 keeps all.

    Example:
        ::

            import os
            from PIL import Image
            from sbert_nonling import ImagePatchEmbed, SharedEncoder
            from sbert_nonling.models import build_sentence_model, build_tiny_encoder

            sentences = ["A man is playing a guitar."]
            path = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)  # offline; e.g. "bert-base-uncased"
            encoder = SharedEncoder(str(path))
            image = ImagePatchEmbed(image_size=32, patch_size=8)  # e.g. ImagePatchEmbed.from_vit("google/vit-...")
            model = build_sentence_model(encoder, front_ends={"image": image})
            model.encode([Image.open(os.environ["SBERT_NONLING_SHARED"] + "/data/images/cifar10/train/cat/0000.jpg")])
    """

    config_keys: list[str] = [
        "image_size",
        "patch_size",
        "num_channels",
        "image_mean",
        "image_std",
        *FrontEnd.config_keys,
    ]
    config_file_name = "image_patch_embed_config.json"

    def __init__(
        self,
        image_size: int = 224,
        patch_size: int = 16,
        num_channels: int = 3,
        embedding_dimension: int | None = None,
        encoder_entry: EncoderEntry = "bypass",
        image_mean: Sequence[float] = IMAGENET_MEAN,
        image_std: Sequence[float] = IMAGENET_STD,
        token_keep_ratio: float = 1.0,
    ) -> None:
        super().__init__(embedding_dimension, encoder_entry, token_keep_ratio)
        self.image_size = self.check_int("image_size", image_size, 1, 8192)
        self.patch_size = self.check_int("patch_size", patch_size, 1, image_size)
        if image_size % patch_size:
            raise ValueError(f"patch_size={patch_size} does not divide image_size={image_size}.")
        if (image_size // patch_size) ** 2 > MAX_TOKENS:
            raise ValueError(
                f"image_size={image_size} / patch_size={patch_size} makes {(image_size // patch_size) ** 2} patches; "
                f"at most {MAX_TOKENS}."
            )
        self.num_channels = self.check_int("num_channels", num_channels, 1, 4)
        self.image_mean = self.check_numbers("image_mean", image_mean, num_channels)
        self.image_std = self.check_numbers("image_std", image_std, num_channels, positive=True)
        if self.embedding_dimension is not None:
            self.build_token_layers()
        to_normalised = [v2.ToDtype(torch.float32, scale=True), v2.Normalize(self.image_mean, self.image_std)]
        self.transform = v2.Compose(
            [v2.PILToTensor(), v2.Resize(image_size, antialias=True), v2.CenterCrop(image_size), *to_normalised]
        )
        # Images already image_size x image_size (e.g. the two-view augmentation's output) skip the resize and crop.
        self.normalise = v2.Compose([v2.PILToTensor(), *to_normalised])

    @classmethod
    def from_vit(
        cls,
        model_name_or_path: str,
        encoder_entry: EncoderEntry = "bypass",
        image_size: int | None = None,
        token_keep_ratio: float = 1.0,
        **vit_kwargs,
    ) -> ImagePatchEmbed:
        """An ImagePatchEmbed holding the embeddings (patch projection, [CLS] token, position embeddings) of a
        transformers ViT checkpoint. Another ``image_size`` than the checkpoint's (a multiple of its patch size) gets
        the position table bicubically interpolated once, by ViT's own ``interpolate_pos_encoding``.

        Args:
            model_name_or_path: a ViT checkpoint (Hub id or folder), e.g. ``"google/vit-base-patch16-224-in21k"``.
            encoder_entry: as the constructor's.
            image_size: the input size; None: the checkpoint's.
            token_keep_ratio: as the constructor's.
            vit_kwargs: passed to ``ViTModel.from_pretrained`` (``revision``, ``local_files_only``, ...).
        """
        from transformers import ViTModel

        vit = ViTModel.from_pretrained(model_name_or_path, add_pooling_layer=False, **vit_kwargs)
        config = vit.config
        size = config.image_size if image_size is None else image_size
        if not isinstance(size, int) or not isinstance(config.patch_size, int):
            raise ValueError(
                f"{model_name_or_path}: ImagePatchEmbed takes square images and patches (one int each), got "
                f"image_size={size!r}, patch_size={config.patch_size!r}."
            )
        module = cls(
            size,
            config.patch_size,
            config.num_channels,
            config.hidden_size,
            encoder_entry,
            token_keep_ratio=token_keep_ratio,
        )
        # ViT's interpolation to the grid of the new module's table (it takes the token count from that table)
        table = module.embeddings.position_embeddings
        positions = vit.embeddings.interpolate_pos_encoding(table, size, size)
        module.embeddings.load_state_dict({**vit.embeddings.state_dict(), "position_embeddings": positions})
        return module

    @property
    def modalities(self) -> list[Modality]:
        return ["image"]

    def build_token_layers(self) -> None:
        """The :class:`~sbert_nonling.modules.patch_tokens.PatchTokens` block, built once the width is known."""
        assert self.embedding_dimension is not None  # the constructor or take_encoder_width set it
        self.embeddings = PatchTokens(
            (self.image_size, self.image_size), self.patch_size, self.num_channels, self.embedding_dimension
        )

    def preprocess(self, inputs: Sequence[Any], prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        self.check_width_known()
        pixels = []
        for index, image in enumerate(inputs):
            if isinstance(image, torch.Tensor):
                if image.ndim != 3 or image.shape[0] != self.num_channels or not image.is_floating_point():
                    raise ValueError(
                        f"image {index} is a tensor of shape {tuple(image.shape)} and dtype {image.dtype}; "
                        f"tensors are taken as normalised pixel values ({self.num_channels}, H, W) float. Pass PIL "
                        "images or arrays otherwise."
                    )
                pixels.append(
                    v2.functional.center_crop(
                        v2.functional.resize(image, self.image_size, antialias=True), self.image_size
                    )
                )
            else:
                image = to_rgb_image(image, f"image {index}")
                sized = image.size == (self.image_size, self.image_size)
                pixels.append(self.normalise(image) if sized else self.transform(image))
        return {"pixel_values": torch.stack(pixels)}

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        pixel_values = features["pixel_values"].to(self.embeddings.cls_token.dtype)  # (B, C, H, W)
        return self.hand_off(features, self.embeddings(pixel_values))
