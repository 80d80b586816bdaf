"""FrontEnd: what every non-text front-end shares (its settings, the token hand-off to the shared encoder, save and
load)."""

from __future__ import annotations

import math
import os
from abc import abstractmethod
from typing import Any, Self

import torch
from sentence_transformers.base.modules import InputModule

from sbert_nonling.modules.shared_encoder import ENTRY_KEYS
from sbert_nonling.util.choices import EncoderEntry
from sbert_nonling.util.patch_dropout import check_token_keep_ratio, drop_patch_tokens

#: The most patch tokens a front-end may make (its position table) and the widest token it may make: a saved config
#: beyond them is refused before anything is allocated.
MAX_TOKENS = 65536
MAX_DIMENSION = 65536


class FrontEnd(InputModule):
    """Base of the modality front-ends (:class:`ImagePatchEmbed`, :class:`AudioPatchEmbed`): an ``InputModule`` that
    turns raw inputs into tokens of the shared encoder's width.

    It owns the settings every front-end has (its ``config_keys``, which subclasses extend), the hand-off to the
    encoder (:meth:`hand_off`) and saving (config + weights in its own sub-folder, read back by sentence-transformers'
    ``Module.load``). Built without a width, it builds its token layers at the encoder's width when
    :class:`ModalityRouter` places it before the encoder (:meth:`take_encoder_width`). A subclass implements
    :meth:`build_token_layers`, ``preprocess`` (raw inputs -> tensors), ``forward`` (tensors -> tokens, ending with
    ``return self.hand_off(features, tokens)``) and ``modalities``; docs/adding_a_modality.md builds one step by step.

    Args:
        embedding_dimension: token width, the encoder's hidden size; None: the encoder's, taken when placed before it.
        encoder_entry: ``"bypass"`` (straight into the encoder layers, VisualCSE's released code) or ``"embeddings"``
            (through the encoder's embedding layer).
        token_keep_ratio: share of the patch tokens kept in training (patch dropout,
            :func:`~sbert_nonling.util.patch_dropout.drop_patch_tokens`); 1.0 keeps all. Eval mode always keeps all.

    Example:
        ::

            import torch
            from torch import nn
            from sbert_nonling.modules.front_end import FrontEnd

            class VectorFrontEnd(FrontEnd):  # (B, 5, 4) vectors -> (B, 5, embedding_dimension) tokens
                config_file_name = "vector_front_end_config.json"

                def __init__(self, embedding_dimension=None, encoder_entry="bypass", token_keep_ratio=1.0):
                    super().__init__(embedding_dimension, encoder_entry, token_keep_ratio)
                    if self.embedding_dimension is not None:
                        self.build_token_layers()

                @property
                def modalities(self):
                    return ["vector"]

                def build_token_layers(self):
                    self.projection = nn.Linear(4, self.embedding_dimension)

                def preprocess(self, inputs, prompt=None, **kwargs):
                    return {"input_values": torch.stack(list(inputs))}

                def forward(self, features, **kwargs):
                    return self.hand_off(features, self.projection(features["input_values"]))

            front_end = VectorFrontEnd(embedding_dimension=8)
            features = front_end(front_end.preprocess(torch.randn(2, 5, 4)))
            features["encoder_inputs_embeds"].shape  # (2, 5, 8): "bypass" goes straight into the encoder layers
            front_end.save(".")  # vector_front_end_config.json + model.safetensors
            loaded = VectorFrontEnd.load(".")
    """

    config_keys: list[str] = ["embedding_dimension", "encoder_entry", "token_keep_ratio"]
    save_in_root = False

    def __init__(
        self,
        embedding_dimension: int | None = None,
        encoder_entry: EncoderEntry = "bypass",
        token_keep_ratio: float = 1.0,
    ) -> None:
        super().__init__()
        if embedding_dimension is not None:
            self.check_int("embedding_dimension", embedding_dimension, 1, MAX_DIMENSION)
        self.embedding_dimension = embedding_dimension
        self.encoder_entry = self.check_entry(encoder_entry)
        self.token_keep_ratio = check_token_keep_ratio(token_keep_ratio)

    @staticmethod
    def check_entry(encoder_entry: str) -> str:
        """``encoder_entry`` if it is a key of :data:`~sbert_nonling.modules.shared_encoder.ENTRY_KEYS`, else a
        ValueError listing them.

        Args:
            encoder_entry: where the tokens enter the encoder.
        """
        if encoder_entry not in ENTRY_KEYS:
            raise ValueError(f"encoder_entry={encoder_entry!r} must be one of {list(ENTRY_KEYS)}.")
        return encoder_entry

    @staticmethod
    def check_int(name: str, value: Any, minimum: int, maximum: int) -> int:
        """``value`` if it is an integer in [``minimum``, ``maximum``], else a ValueError naming ``name``.

        Args:
            name: the setting's name, for the error message.
            value: the value to check (a bool is refused: it is not a count).
            minimum: the smallest value allowed.
            maximum: the largest value allowed.
        """
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise ValueError(f"{name}={value!r} must be an integer from {minimum} to {maximum}.")
        return value

    @staticmethod
    def check_numbers(name: str, values: Any, count: int, positive: bool = False) -> tuple[float, ...]:
        """``values`` as a tuple of floats if it is a list or tuple of ``count`` finite numbers, else a ValueError
        naming ``name``.

        Args:
            name: the setting's name, for the error message.
            values: the list or tuple to check.
            count: how many numbers it must hold (one per channel).
            positive: whether each number must also be above 0 (a normalisation's standard deviations).
        """
        numbers = values if isinstance(values, (list, tuple)) else ()
        valid = len(numbers) == count and all(
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (value > 0 or not positive)
            for value in numbers
        )
        if not valid:
            raise ValueError(f"{name}={values!r} must be {count} finite numbers{' above 0' if positive else ''}.")
        return tuple(float(value) for value in numbers)

    def get_embedding_dimension(self) -> int | None:
        return self.embedding_dimension

    @abstractmethod
    def build_token_layers(self) -> None:
        """Create the layers whose width is ``embedding_dimension`` (projection, [CLS], positions): each front-end's
        own, called by the constructor when the width is given and by :meth:`take_encoder_width` otherwise."""

    def take_encoder_width(self, width: int) -> None:
        """Build the token layers at ``width`` (the shared encoder's hidden size) if no width was given.

        Args:
            width: the shared encoder's hidden size.
        """
        if self.embedding_dimension is None:
            self.embedding_dimension = width
            self.build_token_layers()

    def check_width_known(self) -> None:
        """A ValueError saying how to give the width if the token layers are not built yet."""
        if self.embedding_dimension is None:
            raise ValueError(
                f"{type(self).__name__} was built without embedding_dimension and has not been placed before a shared "
                "encoder yet: add it to a ModalityRouter (build_sentence_model(..., front_ends=...)) or pass "
                "embedding_dimension."
            )

    def hand_off(self, features: dict[str, Any], tokens: torch.Tensor) -> dict[str, Any]:
        """Write ``tokens`` (B, T, embedding_dimension), [CLS] first, under the entry key with an all-ones
        ``attention_mask``; in training, patch dropout keeps [CLS] and ``token_keep_ratio`` of the patch tokens.

        Args:
            features: the features dict the tokens are written into.
            tokens: the front-end's tokens (B, T, embedding_dimension), [CLS] first.
        """
        if self.training:
            tokens = drop_patch_tokens(tokens, self.token_keep_ratio)
        features[ENTRY_KEYS[self.encoder_entry]] = tokens
        features["attention_mask"] = torch.ones(tokens.shape[:2], dtype=torch.long, device=tokens.device)
        return features

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        init_defaults: dict[str, Any] | None = None,
        **kwargs,
    ) -> Self:
        """sentence-transformers' ``Module.load`` (the config, then the weights with ``load_torch_weights``); a saved
        config the constructor refuses is a ValueError naming the file. The arguments are ``Module.load``'s."""
        hub_kwargs: dict[str, Any] = {
            "subfolder": subfolder,
            "token": token,
            "cache_folder": cache_folder,
            "revision": revision,
            "local_files_only": local_files_only,
        }
        try:
            module = super().load(model_name_or_path, init_defaults=init_defaults, **hub_kwargs)
        except (ValueError, TypeError) as error:  # a crafted or damaged config: name the file and the key
            raise ValueError(f"{os.path.join(model_name_or_path, subfolder, cls.config_file_name)}: {error}") from None
        return cls.load_torch_weights(model_name_or_path, **hub_kwargs, model=module)
