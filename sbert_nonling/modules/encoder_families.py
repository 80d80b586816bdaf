"""What differs between transformers encoder families, in one place: the bypass entry, positions, attention
direction."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask, create_bidirectional_sliding_window_mask

logger = logging.getLogger(__name__)

#: A bypass adapter:
#: ``(model, hidden_states (B, T, hidden), attention_mask (B, T)) -> last hidden state (B, T, hidden)``. Adapters take
#: ``model: Any`` (family-specific submodules); the adapter of each family is in :data:`BYPASS_ADAPTERS` (further
#: reading: docs/encoders.md).
BypassAdapter = Callable[[PreTrainedModel, Tensor, Tensor], Tensor]


#: Families whose model builds its padding mask with transformers' ``create_bidirectional_mask`` (ModernBERT: and
#: ``create_bidirectional_sliding_window_mask``) and nothing else, so that it takes a prepared mask as is
#: (:func:`encoder_attention_mask`); ``vit_mae`` is Pixel Linguist's PIXEL encoder. DeBERTa-v2 builds its pairwise
#: mask itself without a check, decoders build causal masks (not prepared: they keep transformers' check).
PREPARED_MASK_MODEL_TYPES = (
    "bert",
    "roberta",
    "xlm-roberta",
    "electra",
    "mpnet",
    "distilbert",
    "modernbert",
    "vit_mae",
)
#: The attention implementations whose masks are plain tensors that :func:`prepared_attention_mask` can build.
PREPARED_MASK_ATTENTION = ("sdpa", "eager")


def mask_check_syncs(device: torch.device) -> bool:
    """Whether transformers' check that a padding mask may be left out (``padding_mask.all()`` in
    ``create_bidirectional_mask``, read back on the host) waits for ``device``: every device but the CPU, whose
    tensors the host reads where they lie.

    Args:
        device: the device of the padding mask.
    """
    return device.type != "cpu"


def prepared_attention_mask(config: Any, attention_mask: Tensor, dtype: torch.dtype) -> Tensor | dict[str, Tensor]:
    """The 4-D mask (B, 1, T, T) that ``config``'s family builds from the 2-D padding mask, built with transformers'
    own ``create_bidirectional_mask`` but always materialised (``allow_is_bidirectional_skip=False``), so that no
    value of the mask is read on the host: the check whether it may be left out is never made. A model given it uses
    it as is; ModernBERT gets its ``{"full_attention", "sliding_attention"}`` pair. A batch with padding gets the very
    mask the 2-D one would have made; one without padding an all-true mask where the 2-D one would have made none,
    the same attention (up to SDPA's kernel choice).

    Args:
        config: the model's transformers config (a :data:`PREPARED_MASK_MODEL_TYPES` family, an implementation of
            :data:`PREPARED_MASK_ATTENTION`).
        attention_mask: the padding mask (B, T), 1 for real tokens.
        dtype: the dtype of the hidden states the model's layers see (the eager implementation's additive mask).

    Example::

        import torch
        from transformers import BertConfig

        from sbert_nonling.modules.encoder_families import prepared_attention_mask

        config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
        config._attn_implementation = "sdpa"
        mask = prepared_attention_mask(config, torch.tensor([[1, 1, 0]]), torch.float32)
        print(mask.shape, mask[0, 0, 0].tolist())  # torch.Size([1, 1, 3, 3]) [True, True, False]
    """
    batch_size, length = attention_mask.shape
    # create_bidirectional_mask reads the batch size, length, dtype and device of the embeddings, nothing else
    embeddings_shape = attention_mask.new_empty((batch_size, length, 0), dtype=dtype)
    mask_kwargs: dict[str, Any] = {
        "config": config,
        "inputs_embeds": embeddings_shape,
        "attention_mask": attention_mask,
        "allow_is_bidirectional_skip": False,
    }
    if config.model_type == "modernbert":
        return {
            "full_attention": create_bidirectional_mask(**mask_kwargs),
            "sliding_attention": create_bidirectional_sliding_window_mask(**mask_kwargs),
        }
    return create_bidirectional_mask(**mask_kwargs)


def encoder_attention_mask(model: Any, attention_mask: Tensor, dtype: torch.dtype) -> Tensor | dict[str, Tensor]:
    """The padding mask to hand ``model``: :func:`prepared_attention_mask` where transformers' check of the 2-D mask
    would wait for the device (:func:`mask_check_syncs`: a GPU; the one host sync of an eager step) and the family and
    attention implementation take a prepared mask (:data:`PREPARED_MASK_MODEL_TYPES`,
    :data:`PREPARED_MASK_ATTENTION`); otherwise the 2-D mask unchanged (on the CPU the check costs no sync, and the
    2-D mask keeps the committed CPU numbers). Compiled steps trace the check away either way.

    Args:
        model: the transformers model whose layers get the mask.
        attention_mask: the padding mask (B, T), 1 for real tokens.
        dtype: the dtype of the hidden states the model's layers see.
    """
    config = model.config
    if (
        mask_check_syncs(attention_mask.device)
        and config.model_type in PREPARED_MASK_MODEL_TYPES
        and config._attn_implementation in PREPARED_MASK_ATTENTION
    ):
        return prepared_attention_mask(config, attention_mask, dtype)
    return attention_mask


def _masked_stack(stack: str, **call_kwargs: Any) -> BypassAdapter:
    """An adapter running ``model.<stack>`` with the 4-D mask of the configured attention implementation (BERT-like,
    MPNet, whose relative bias follows the given sequence, DistilBERT; a mask :func:`encoder_attention_mask` prepared
    passes as is)."""

    def adapter(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
        mask = create_bidirectional_mask(
            config=model.config,
            inputs_embeds=hidden_states,
            attention_mask=encoder_attention_mask(model, attention_mask, hidden_states.dtype),
        )
        return getattr(model, stack)(hidden_states, attention_mask=mask, **call_kwargs).last_hidden_state

    return adapter


def _deberta_v2_encoder(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """DeBERTa-v2 / v3: ``model.encoder`` builds its pairwise mask from the 2-D one and adds relative positions."""
    return model.encoder(
        hidden_states, attention_mask.long(), output_hidden_states=False, return_dict=True
    ).last_hidden_state


def _modernbert_layers(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """ModernBERT: ``model.layers`` alternate global and sliding-window attention, each with its own mask and rotary
    table (transformers 5 runs it padded); the final LayerNorm belongs to the encoder."""
    masks = encoder_attention_mask(model, attention_mask, hidden_states.dtype)
    if not isinstance(masks, dict):
        mask_kwargs: dict[str, Any] = {"config": model.config, "inputs_embeds": hidden_states, "attention_mask": masks}
        masks = {
            "full_attention": create_bidirectional_mask(**mask_kwargs),
            "sliding_attention": create_bidirectional_sliding_window_mask(**mask_kwargs),
        }
    position_ids = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
    rotary = {kind: model.rotary_emb(hidden_states, position_ids, kind) for kind in set(model.config.layer_types)}
    for layer in model.layers:
        hidden_states = layer(
            hidden_states, attention_mask=masks[layer.attention_type], position_embeddings=rotary[layer.attention_type]
        )
    return model.final_norm(hidden_states)


def _decoder_layers(model: PreTrainedModel, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """Decoder embedders (Qwen3, Gemma-3): the embedding layer is the token lookup alone and positions are rotary, so
    ``model(inputs_embeds=...)`` already enters "straight into the layers", with the model's own (causal or
    bidirectional) mask."""
    return model(inputs_embeds=hidden_states, attention_mask=attention_mask, use_cache=False).last_hidden_state


#: Families whose text path is a decoder: causal attention unless the config enables bidirectional attention.
DECODER_MODEL_TYPES = ("qwen3", "gemma3_text")
#: ``config.model_type`` -> how front-end tokens enter that family's layers with ``encoder_entry="bypass"``.
BYPASS_ADAPTERS: dict[str, BypassAdapter] = {
    **dict.fromkeys(("bert", "roberta", "xlm-roberta", "electra"), _masked_stack("encoder")),
    "mpnet": _masked_stack("encoder", return_dict=True),
    "deberta-v2": _deberta_v2_encoder,
    "distilbert": _masked_stack("transformer"),
    "modernbert": _modernbert_layers,
    **dict.fromkeys(DECODER_MODEL_TYPES, _decoder_layers),
}


def bypass_embedding_layer(model: PreTrainedModel, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """Run ``hidden_states`` (B, T, hidden) through ``model``'s layers without its embedding layer, the 2-D padding
    mask turned into the form the family's layers expect and positions computed for the front-end's own sequence.
    Families are looked up by ``config.model_type`` in :data:`BYPASS_ADAPTERS` (a ValueError lists them otherwise).

    Args:
        model: the transformers encoder (a family of :data:`BYPASS_ADAPTERS`).
        hidden_states: the front-end's tokens (B, T, hidden).
        attention_mask: the padding mask (B, T), 1 for real tokens.
    """
    model_type = getattr(model.config, "model_type", None)
    adapter = BYPASS_ADAPTERS.get(model_type) if isinstance(model_type, str) else None
    if adapter is None:
        raise ValueError(
            f"encoder_entry='bypass' has no adapter for {type(model).__name__} (model_type {model_type!r}); the "
            f"families with one are {sorted(BYPASS_ADAPTERS)}. Use encoder_entry='embeddings', which enters through "
            "the model's own forward (inputs_embeds) and works with any encoder."
        )
    return adapter(model, hidden_states, attention_mask)


def attends_causally(config) -> bool:
    """True for a decoder family whose config does not switch on bidirectional attention (e.g. Qwen3-Embedding).

    Args:
        config: the model's transformers config.
    """
    return config.model_type in DECODER_MODEL_TYPES and not getattr(config, "use_bidirectional_attention", False)


def learned_position_embeddings(model: PreTrainedModel) -> nn.Module | None:
    """The absolute position-embedding table of the embedding layer, or None where positions are relative / rotary
    (DeBERTa-v2 without ``position_biased_input``, ModernBERT, decoders).

    Args:
        model: the transformers encoder.
    """
    return getattr(getattr(model, "embeddings", None), "position_embeddings", None)
