"""PixelEncoder: the PIXEL (ViT-MAE) encoder over rendered text, without masking, for sentence embeddings."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Self, cast

import torch
from sentence_transformers.base.modules import Module
from transformers import ViTMAEConfig, ViTMAEModel
from transformers.utils import cached_file

from sbert_nonling.modules.encoder_families import encoder_attention_mask

logger = logging.getLogger(__name__)

#: The pretrained PIXEL checkpoint on the Hugging Face Hub.
PIXEL_BASE = "Team-PIXEL/pixel-base"
#: PIXEL-base's encoder sizes (ViT-MAE base): :meth:`PixelEncoder.from_config`'s defaults.
PIXEL_BASE_SIZES: dict[str, int] = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
}
#: Keys of a PIXEL ``config.json`` (``model_type`` "pixel") that mean the same in :class:`ViTMAEConfig`.
PIXEL_CONFIG_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "initializer_range",
    "layer_norm_eps",
    "qkv_bias",
    "patch_size",
    "num_channels",
)


class PixelEncoder(Module):
    """The PIXEL encoder (a ViT-MAE encoder over a one-row strip of 16x16 patches) as a sentence-transformers module.

    ``forward`` runs :class:`~transformers.ViTMAEModel` on :class:`~sbert_nonling.modules.PixelRenderer`'s features
    without masking or shuffling, [CLS] always attended (the patch mask prepared as 4-D on a GPU:
    :func:`~sbert_nonling.modules.encoder_families.encoder_attention_mask`), and writes ``token_embeddings``
    (B, max_patches, hidden) for the *patches only*: ``Pooling(hidden, "mean")`` is then PIXEL's mean over unmasked
    patches. :meth:`from_pretrained` also reads PIXEL's checkpoint format; saved as a ``vit_mae`` checkpoint plus
    ``pixel_encoder_config.json``.

    Args:
        model: a ``ViTMAEModel`` whose ``image_size`` is ``(patch_size, max_patches * patch_size)``; use
            :meth:`from_pretrained` or :meth:`from_config` to build one.

    Example:
        ::

            from sentence_transformers import SentenceTransformer
            from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
            from sbert_nonling import ModalityRouter, PixelEncoder, PixelRenderer

            # offline: a small random encoder;
            # e.g. PixelEncoder.from_pretrained("Team-PIXEL/pixel-base", max_patches=64)
            encoder = PixelEncoder.from_config(
                max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
            )
            router = ModalityRouter({"pixel": [PixelRenderer(max_patches=16), encoder]}, default_route="pixel")
            model = SentenceTransformer(modules=[router, Pooling(32, "mean"), Normalize()])  # 768 for PIXEL-base
            model.encode(["A man is playing a guitar."])
    """

    config_file_name = "pixel_encoder_config.json"
    config_keys = ["max_patches"]
    save_in_root = False

    def __init__(self, model: ViTMAEModel) -> None:
        super().__init__()
        height, width = _pair(model.config.image_size)
        patch_size = _pair(model.config.patch_size)
        if height != patch_size[0] or width % patch_size[1]:
            raise ValueError(
                f"A PIXEL encoder reads one row of patches: image_size must be (patch_size, n * patch_size), got "
                f"image_size={model.config.image_size} with patch_size={model.config.patch_size}."
            )
        model.config.mask_ratio = 0.0
        # ViT-MAE's fixed sin-cos position table, which transformers' from_pretrained leaves trainable
        model.embeddings.position_embeddings.requires_grad_(False)
        self.model = model
        self.patch_size = patch_size[1]
        self.max_patches = width // self.patch_size

    @classmethod
    def from_config(cls, max_patches: int = 64, patch_size: int = 16, **config_kwargs: Any) -> PixelEncoder:
        """A randomly initialised PIXEL-architecture encoder (PIXEL-base's sizes, :data:`PIXEL_BASE_SIZES`, and
        ViT-MAE's qkv_bias and layer_norm_eps by default).

        Args:
            max_patches: the patches of one strip (the sequence is 1 + max_patches with [CLS]).
            patch_size: the side of a square patch, in pixels.
            **config_kwargs: ``transformers.ViTMAEConfig`` settings that replace the defaults, e.g. ``hidden_size``,
                ``num_hidden_layers``, ``num_attention_heads``, ``intermediate_size``.
        """
        sizes = {**PIXEL_BASE_SIZES, **config_kwargs}
        config = ViTMAEConfig(
            image_size=(patch_size, max_patches * patch_size), patch_size=patch_size, mask_ratio=0.0, **sizes
        )
        return cls(ViTMAEModel(config))

    @classmethod
    def from_pretrained(cls, model_name_or_path: str = PIXEL_BASE, max_patches: int = 64, **hub_kwargs) -> Self:
        """Load a PIXEL checkpoint (``model_type`` "pixel", e.g. Team-PIXEL/pixel-base) or a saved ``vit_mae`` one, its
        position table resized to ``max_patches`` (:func:`resize_position_table`); ``hub_kwargs`` go to transformers.
        A ValueError if it is neither, or lacks encoder parameters.

        Args:
            model_name_or_path: a Hub id or a local folder of a PIXEL or ViT-MAE checkpoint.
            max_patches: the patches of one strip the encoder reads.
        """
        config_path = cached_file(model_name_or_path, "config.json", **hub_kwargs)
        assert config_path is not None  # cached_file raises for a missing file unless told not to
        stored = json.loads(Path(config_path).read_text(encoding="utf8"))
        model_type = stored.get("model_type")
        if model_type == "pixel":
            missing = [key for key in PIXEL_CONFIG_KEYS + ("image_size",) if key not in stored]
            if missing:
                raise ValueError(f"{model_name_or_path}: PIXEL config.json lacks {missing}.")
            config = ViTMAEConfig(
                **{key: stored[key] for key in PIXEL_CONFIG_KEYS},
                image_size=tuple(stored["image_size"]),
                mask_ratio=0.0,
            )
        elif model_type == "vit_mae":
            config = ViTMAEConfig.from_dict({**stored, "mask_ratio": 0.0})
        else:
            raise ValueError(
                f"{model_name_or_path} has model_type={model_type!r}; PixelEncoder loads PIXEL ('pixel') or ViT-MAE "
                "('vit_mae') checkpoints."
            )
        # Annotated as returning the model alone; with output_loading_info=True it returns (model, loading_info).
        model, loading_info = cast(
            tuple[ViTMAEModel, dict[str, Any]],
            ViTMAEModel.from_pretrained(model_name_or_path, config=config, output_loading_info=True, **hub_kwargs),
        )
        if loading_info["missing_keys"]:
            raise ValueError(
                f"{model_name_or_path} is missing encoder parameters {sorted(loading_info['missing_keys'])[:8]}; it "
                "is not a PIXEL / ViT-MAE checkpoint."
            )
        return cls(resize_position_table(model, max_patches))

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        pixel_values, patch_mask = features["pixel_values"], features["attention_mask"]
        expected = (self.model.config.num_channels, self.patch_size, self.max_patches * self.patch_size)
        if pixel_values.ndim != 4 or tuple(pixel_values.shape[1:]) != expected:
            raise ValueError(
                f"PixelEncoder expects pixel_values of shape (batch, {', '.join(map(str, expected))}) (max_patches="
                f"{self.max_patches}), got {tuple(pixel_values.shape)}; render with the same max_patches."
            )
        if tuple(patch_mask.shape) != (pixel_values.shape[0], self.max_patches):
            raise ValueError(
                f"PixelEncoder expects a patch attention_mask of shape ({pixel_values.shape[0]}, {self.max_patches}), "
                f"got {tuple(patch_mask.shape)}."
            )
        batch_size = pixel_values.shape[0]
        in_order = torch.arange(self.max_patches, device=pixel_values.device).expand(batch_size, -1)
        with_cls = torch.cat([patch_mask.new_ones(batch_size, 1), patch_mask], dim=1)
        # a GPU's batch gets its 4-D mask ready: transformers' check of the 2-D one would wait for the device
        mask = encoder_attention_mask(self.model, with_cls, self.model.dtype)
        output = self.model(
            pixel_values=pixel_values.to(self.model.dtype), noise=in_order, attention_mask=mask, return_dict=True
        )
        features["token_embeddings"] = output.last_hidden_state[:, 1:]
        return features

    def get_embedding_dimension(self) -> int:
        return self.model.config.hidden_size

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.model.save_pretrained(output_path, safe_serialization=safe_serialization)
        self.save_config(output_path)

    @classmethod
    def load(cls, model_name_or_path: str, *args: Any, **kwargs: Any) -> Self:
        """The saved ``max_patches``, then the checkpoint through :meth:`from_pretrained`."""
        hub_kwargs = {
            key: kwargs[key] for key in ("subfolder", "token", "revision", "local_files_only") if key in kwargs
        }
        max_patches = cls.load_config(model_name_or_path, cache_folder=kwargs.get("cache_folder"), **hub_kwargs)[
            "max_patches"
        ]
        return cls.from_pretrained(
            model_name_or_path, max_patches=max_patches, cache_dir=kwargs.get("cache_folder"), **hub_kwargs
        )


def resize_position_table(model: ViTMAEModel, max_patches: int) -> ViTMAEModel:
    """``model`` rebuilt for a strip of ``max_patches`` patches: the first ``1 + max_patches`` position rows kept (as
    Pixel Linguist does), or the patch rows linearly interpolated along the strip if more are needed (an
    approximation of PIXEL's 2-D sin-cos grid). All other weights are copied unchanged.

    Args:
        model: the ViT-MAE model whose position table is resized.
        max_patches: the patches of one strip.
    """
    if max_patches < 1:
        raise ValueError(f"max_patches={max_patches} must be at least 1.")
    patch_size = _pair(model.config.patch_size)[1]
    if _pair(model.config.image_size) == (patch_size, max_patches * patch_size):
        return model
    table = model.embeddings.position_embeddings.data  # (1, 1 + stored, hidden)
    stored = table.shape[1] - 1
    if max_patches <= stored:
        resized = table[:, : 1 + max_patches]
    else:
        logger.warning("Interpolating %d stored patch positions to %d patches.", stored, max_patches)
        patch_rows = torch.nn.functional.interpolate(
            table[:, 1:].transpose(1, 2), size=max_patches, mode="linear", align_corners=True
        )
        resized = torch.cat([table[:, :1], patch_rows.transpose(1, 2)], dim=1)
    config = ViTMAEConfig.from_dict({**model.config.to_dict(), "image_size": (patch_size, max_patches * patch_size)})
    # PreTrainedModel.to is decorated with functools.wraps(torch.nn.Module.to), so its stub is the unbound signature.
    resized_model = ViTMAEModel(config).to(table.dtype)  # type: ignore[arg-type]
    resized_model.load_state_dict({**model.state_dict(), "embeddings.position_embeddings": resized.clone()})
    return resized_model


def _pair(value: int | tuple[int, int] | list[int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))
