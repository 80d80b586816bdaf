"""The one transformer encoder that every modality of a :class:`ModalityRouter` ends in."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sentence_transformers.base.modules.transformer import ProcessingKwargs
from sentence_transformers.sentence_transformer.modules import Transformer
from torch import Tensor

from sbert_nonling.modules.encoder_families import bypass_embedding_layer, encoder_attention_mask
from sbert_nonling.util.validation import replace_lone_surrogates

logger = logging.getLogger(__name__)

#: Feature key a front-end writes to enter through the encoder's embedding layer (word embeddings are skipped, the
#: model's own position / token-type embeddings and embedding LayerNorm are applied).
EMBEDDINGS_ENTRY_KEY = "inputs_embeds"
#: Feature key a front-end writes to enter the encoder layers directly, bypassing the embedding layer (VisualCSE).
BYPASS_ENTRY_KEY = "encoder_inputs_embeds"
#: The feature key each entry mode reads, by mode name.
ENTRY_KEYS: dict[str, str] = {"embeddings": EMBEDDINGS_ENTRY_KEY, "bypass": BYPASS_ENTRY_KEY}


class SharedEncoder(Transformer):
    """A sentence-transformers :class:`Transformer` that also accepts token sequences made by non-text front-ends.

    Text is tokenized and encoded exactly as by the built-in ``Transformer``. Front-end tokens (B, T, hidden) with
    ``features["attention_mask"]`` (B, T) enter either through the embedding layer (``features["inputs_embeds"]``:
    the model's position, token-type and LayerNorm embeddings are added) or straight into the encoder layers
    (``features["encoder_inputs_embeds"]``, as the released VisualCSE / AudioCSE code;
    :func:`~sbert_nonling.modules.encoder_families.bypass_embedding_layer`). Either way it writes
    ``features["token_embeddings"]`` (B, T, hidden). Front-ends pick the entry with :data:`ENTRY_KEYS`.

    Args:
        Same as :class:`sentence_transformers.sentence_transformer.modules.Transformer`.

    Example:
        ::

            from sentence_transformers import SentenceTransformer
            from sentence_transformers.sentence_transformer.modules import Pooling
            from sbert_nonling import ModalityRouter, SharedEncoder
            from sbert_nonling.models import build_tiny_encoder

            # offline: a tiny random encoder; e.g. "bert-base-uncased"
            path = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)
            encoder = SharedEncoder(str(path), max_seq_length=32)
            model = SentenceTransformer(
                modules=[ModalityRouter.from_encoder(encoder), Pooling(encoder.get_embedding_dimension(), "cls")]
            )
            embeddings = model.encode(["A man is playing a guitar."])
    """

    def preprocess(
        self,
        inputs: Sequence[Any],
        prompt: str | None = None,
        processing_kwargs: ProcessingKwargs | None = None,
        **kwargs,
    ) -> dict[str, Any]:
        """As Transformer's, with unpaired surrogates in sentences replaced by U+FFFD (the tokenizer rejects them)."""
        inputs = [replace_lone_surrogates(item) if isinstance(item, str) else item for item in inputs]
        return super().preprocess(inputs, prompt=prompt, processing_kwargs=processing_kwargs, **kwargs)

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        if BYPASS_ENTRY_KEY in features:
            features[self.module_output_name] = self.encode_layers(
                features[BYPASS_ENTRY_KEY], features["attention_mask"]
            )
        elif EMBEDDINGS_ENTRY_KEY in features:
            features[self.module_output_name] = self.encode_embeddings(
                features[EMBEDDINGS_ENTRY_KEY], features["attention_mask"]
            )
        elif "attention_mask" in features:
            # a GPU's text batch gets its 4-D mask ready: transformers' check of the 2-D one would wait for the device
            mask = encoder_attention_mask(self.model, features["attention_mask"], self.model.dtype)
            features = super().forward(features, **{"attention_mask": mask, **kwargs})
        else:
            features = super().forward(features, **kwargs)
        return features

    def encode_embeddings(self, inputs_embeds: Tensor, attention_mask: Tensor) -> Tensor:
        """Run ``inputs_embeds`` (B, T, width) through the whole model, embedding layer included (word lookup skipped);
        ``width`` is the embedding layer's (below the hidden size in ELECTRA-small, ALBERT), checked here.

        Args:
            inputs_embeds: a front-end's tokens at the embedding layer's width (B, T, width).
            attention_mask: the padding mask (B, T), 1 for real tokens.
        """
        width, hidden_size = self.model.get_input_embeddings().embedding_dim, self.get_embedding_dimension()
        if inputs_embeds.ndim != 3 or inputs_embeds.shape[-1] != width:
            factorised = (
                f" ({type(self.model).__name__} embeds tokens at width {width}, below its hidden size {hidden_size}: "
                "use "
            )
            hint = (
                "" if width == hidden_size else f"{factorised}encoder_entry='bypass', which takes hidden-size tokens)"
            )
            raise ValueError(
                f"Front-end tokens must have shape (batch, tokens, {width}) to enter the embedding layer, got "
                f"{tuple(inputs_embeds.shape)}{hint}."
            )
        return self.model(
            inputs_embeds=inputs_embeds, attention_mask=attention_mask, return_dict=True
        ).last_hidden_state

    def encode_layers(self, hidden_states: Tensor, attention_mask: Tensor) -> Tensor:
        """Run ``hidden_states`` (B, T, hidden) through the encoder layers only (:func:`bypass_embedding_layer`),
        masking padded positions, after checking the shapes.

        Args:
            hidden_states: a front-end's tokens at the hidden size (B, T, hidden).
            attention_mask: the padding mask (B, T), 1 for real tokens.
        """
        hidden_size = self.get_embedding_dimension()
        if hidden_states.ndim != 3 or hidden_states.shape[-1] != hidden_size:
            raise ValueError(
                f"Front-end tokens must have shape (batch, tokens, {hidden_size}) to enter the encoder, got "
                f"{tuple(hidden_states.shape)}."
            )
        if attention_mask.shape != hidden_states.shape[:2]:
            raise ValueError(
                f"attention_mask must have shape {tuple(hidden_states.shape[:2])} (batch, tokens) like the front-end "
                f"tokens, got {tuple(attention_mask.shape)}."
            )
        return bypass_embedding_layer(self.model, hidden_states, attention_mask)
