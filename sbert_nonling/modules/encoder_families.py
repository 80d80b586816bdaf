"""What differs between transformers encoder families, in one place: the bypass entry, positions, attention direction."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask, create_bidirectional_sliding_window_mask

logger = logging.getLogger(__name__)

#: A bypass adapter: ``(model, hidden_states (B, T, hidden), attention_mask (B, T)) -> last hidden state (B, T, hidden)``.
BypassAdapter = Callable[[PreTrainedModel, Tensor, Tensor], Tensor]
# The encoder-family adapters below take ``model: Any``: they reach family-specific submodules (``encoder``,
# ``transformer``, ``layers``, ``rotary_emb``, ...) that PreTrainedModel does not declare.


def _bert_encoder_stack(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """BERT, RoBERTa, XLM-R, ELECTRA: ``model.encoder`` takes the 4-D mask of the configured attention implementation.

    The embedding layer skipped: absolute position + token-type embeddings, embedding LayerNorm (and ELECTRA's
    ``embeddings_project``, so front-end tokens have the encoder's hidden width).
    """
    mask = create_bidirectional_mask(config=model.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
    return model.encoder(hidden_states, attention_mask=mask).last_hidden_state


def _mpnet_encoder(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """MPNet: ``model.encoder`` computes its relative position bias from the length of the sequence it is given, so
    the front-end's tokens get the bias of their own positions; the additive 4-D mask is MPNet's eager form.

    The embedding layer skipped: absolute position embeddings (from ``padding_idx + 1``) and LayerNorm.
    """
    mask = create_bidirectional_mask(config=model.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
    return model.encoder(hidden_states, attention_mask=mask, return_dict=True).last_hidden_state


def _deberta_v2_encoder(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """DeBERTa-v2 / v3: ``model.encoder`` takes the 2-D padding mask (it builds its own pairwise mask from it) and
    adds the disentangled relative position embeddings for the sequence it is given.

    The embedding layer skipped: LayerNorm, the padding-mask multiplication (and absolute positions where
    ``position_biased_input``).
    """
    return model.encoder(hidden_states, attention_mask.long(), output_hidden_states=False, return_dict=True).last_hidden_state


def _distilbert_transformer(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """DistilBERT: the layers are ``model.transformer``, taking the 4-D mask of the configured attention.

    The embedding layer skipped: absolute position embeddings and LayerNorm.
    """
    mask = create_bidirectional_mask(config=model.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
    return model.transformer(hidden_states, attention_mask=mask).last_hidden_state


def _modernbert_layers(model: Any, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """ModernBERT: ``model.layers`` alternate global and sliding-window (local) attention, each kind with its own
    rotary table; padding is a mask for both kinds (transformers 5 runs ModernBERT padded, not unpadded), and the
    final LayerNorm belongs to the encoder, so it is applied.

    The embedding layer skipped: its LayerNorm and dropout (ModernBERT has no position embeddings).
    """
    mask_kwargs: dict[str, Any] = {"config": model.config, "inputs_embeds": hidden_states, "attention_mask": attention_mask}
    masks = {
        "full_attention": create_bidirectional_mask(**mask_kwargs),
        "sliding_attention": create_bidirectional_sliding_window_mask(**mask_kwargs),
    }
    position_ids = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
    rotary = {kind: model.rotary_emb(hidden_states, position_ids, kind) for kind in set(model.config.layer_types)}
    for layer in model.layers:
        hidden_states = layer(hidden_states, attention_mask=masks[layer.attention_type], position_embeddings=rotary[layer.attention_type])
    return model.final_norm(hidden_states)


def _decoder_layers(model: PreTrainedModel, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """Decoder embedders (Qwen3, Gemma-3): the embedding layer is the token lookup alone (Gemma's ``sqrt(hidden)``
    scale included) and positions are rotary, applied inside attention, so ``model(inputs_embeds=...)`` is already
    "straight into the layers", with the model's own mask: causal, or bidirectional where the config says
    ``use_bidirectional_attention`` (EmbeddingGemma), sliding-window layers included. For these families the two
    entries run the same computation.
    """
    return model(inputs_embeds=hidden_states, attention_mask=attention_mask, use_cache=False).last_hidden_state


#: ``config.model_type`` -> how front-end tokens enter that family's layers with ``encoder_entry="bypass"``.
BYPASS_ADAPTERS: dict[str, BypassAdapter] = {
    "bert": _bert_encoder_stack,
    "roberta": _bert_encoder_stack,
    "xlm-roberta": _bert_encoder_stack,
    "electra": _bert_encoder_stack,
    "mpnet": _mpnet_encoder,
    "deberta-v2": _deberta_v2_encoder,
    "distilbert": _distilbert_transformer,
    "modernbert": _modernbert_layers,
    "qwen3": _decoder_layers,
    "gemma3_text": _decoder_layers,
}
#: Families whose text path is a decoder: causal attention unless the config enables bidirectional attention.
DECODER_MODEL_TYPES = ("qwen3", "gemma3_text")


def bypass_embedding_layer(model: PreTrainedModel, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
    """Run ``hidden_states`` (B, T, hidden) through ``model``'s layers without its embedding layer.

    The 2-D padding mask ``attention_mask`` (B, T) becomes whatever the family's layers expect (4-D additive or
    boolean, DeBERTa's pairwise mask, ModernBERT's local / global pair, a decoder's causal mask), and positions
    (relative bias, rotary) are computed for the front-end's own sequence. Families are looked up by
    ``config.model_type`` in :data:`BYPASS_ADAPTERS`; adding one is adding an adapter there.

    Raises:
        ValueError: if the model's family has no adapter (the message lists those that have one).
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
    """True for a decoder family whose config does not switch on bidirectional attention (e.g. Qwen3-Embedding)."""
    return config.model_type in DECODER_MODEL_TYPES and not getattr(config, "use_bidirectional_attention", False)


def learned_position_embeddings(model: PreTrainedModel) -> nn.Module | None:
    """The absolute position-embedding table of the embedding layer, or None where positions are relative / rotary
    (DeBERTa-v2 without ``position_biased_input``, ModernBERT, decoders)."""
    return getattr(getattr(model, "embeddings", None), "position_embeddings", None)
