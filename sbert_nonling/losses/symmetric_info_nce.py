"""Symmetric (CLIP-style) InfoNCE with a fixed or learnable temperature, on top of MultipleNegativesRankingLoss."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.choices import TrainingHead
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.similarity import cosine_similarity
from sbert_nonling.util.views import forward_views


class SymmetricInfoNCE(LossConfig, MultipleNegativesRankingLoss):
    config_keys = ("learnable_temperature", "max_scale", "gather_across_devices")
    bibtex_keys = ("xiao2024pixel", "radford2021clip")

    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = 0.05,
        learnable_temperature: bool = False,
        max_scale: float = 100.0,
        gather_across_devices: bool = False,
        token_head: TrainingHead = "none",
    ) -> None:
        r"""Symmetric InfoNCE: the mean of the row-wise and column-wise cross-entropies of the cosine-similarity
        matrix of L2-normalised pairs, as CLIP and Pixel Linguist train.

        For :math:`N` pairs :math:`(a_i, b_i)` with :math:`s_{ij} = \cos(a_i, b_j) / \tau`:

        .. math::

            \mathcal{L} = \frac{1}{2N} \sum_i \Big( -\log \frac{e^{s_{ii}}}{\sum_j e^{s_{ij}}}
                - \log \frac{e^{s_{ii}}}{\sum_j e^{s_{ji}}} \Big)

        Optional hard negatives (extra columns) join the row-wise denominators.

        What it adds to :class:`~sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss`
        (configured with ``directions=("query_to_doc", "doc_to_query")``, ``partition_mode="per_direction"``): CLIP's
        learnable temperature, a loss-owned parameter :math:`\log(1/\tau)` (``logit_scale``) with the scale clamped
        to ``max_scale`` (MultipleNegativesRankingLoss's ``scale`` is set from it before each loss); and Pixel
        Linguist's training-only token head (``head``; its kind is ``token_head``), owned by the loss so the saved
        model is the one evaluated.
        The similarities, the scale and the logsumexp are computed in float32 under autocast (docs/reliability.md).

        Args:
            model: the SentenceTransformer being trained.
            temperature: :math:`\tau` (Pixel Linguist: 0.05), the initial value when learnable.
            learnable_temperature: learn :math:`\log(1/\tau)` (CLIP).
            max_scale: upper bound of :math:`1/\tau` when learnable.
            gather_across_devices: use every process's pairs as negatives (DDP), with gradients.
            token_head: the training-only head on every token before the mean over unmasked tokens
                (:func:`~sbert_nonling.util.heads.make_training_head`; Pixel Linguist: ``"linear_gelu_layernorm"``), or
                ``"none"`` (the default): the model's own sentence embedding.

        References:
            - Radford et al., Learning Transferable Visual Models From Natural Language Supervision (CLIP), 2021.
            - Xiao et al., Pixel Sentence Representation Learning, 2024. https://arxiv.org/abs/2402.08183

        Inputs:
            +------------------------------------------+--------+
            | Inputs                                   | Labels |
            +==========================================+========+
            | (anchor, positive) pairs                 | none   |
            +------------------------------------------+--------+
            | (anchor, positive, negative_1, ...)      | none   |
            +------------------------------------------+--------+

        Example:
            ::

                from sbert_nonling import SymmetricInfoNCE
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="mean")
                loss = SymmetricInfoNCE(model, temperature=0.05, learnable_temperature=True)
                # Pixel Linguist: SymmetricInfoNCE(pixel_model, temperature=0.05, token_head="linear_gelu_layernorm")
        """
        if temperature <= 0:
            raise ValueError(f"temperature={temperature!r} must be positive (Pixel Linguist uses 0.05).")
        if learnable_temperature and not 1.0 / temperature <= max_scale:
            raise ValueError(f"1 / temperature = {1 / temperature:g} exceeds max_scale={max_scale:g}.")
        # cosine_similarity, not sentence-transformers' cos_sim: the same numbers without the Tensor.to_dense() whose
        # gradient a compiled graph drops on torch 2.11 / 2.12 (sbert_nonling/util/similarity.py)
        super().__init__(
            model,
            scale=1.0 / temperature,
            similarity_fct=cosine_similarity,
            gather_across_devices=gather_across_devices,
            directions=("query_to_doc", "doc_to_query"),
            partition_mode="per_direction",
        )
        self.learnable_temperature = learnable_temperature
        self.max_scale = max_scale
        self.logit_scale = nn.Parameter(torch.tensor(math.log(self.scale))) if learnable_temperature else None
        self.token_head = token_head
        self.head = (
            None
            if token_head == "none"
            else make_training_head(token_head, embedding_dimension(model), name="token_head")
        )

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None) -> Tensor:
        outputs = forward_views(self.model, sentence_features)  # same-size renders: one forward pass
        if self.head is None:
            return self.compute_loss_from_embeddings([output["sentence_embedding"] for output in outputs], labels)
        return self.compute_loss_from_embeddings([self.embed_through_token_head(output) for output in outputs], labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """MultipleNegativesRankingLoss's two-direction loss on the embeddings, in float32 under autocast; with a
        learnable temperature, ``scale`` is first set to ``exp(logit_scale)`` clamped to ``max_scale``."""
        if self.logit_scale is not None:
            # MultipleNegativesRankingLoss multiplies the similarities by self.scale: here a tensor with a gradient
            self.scale = self.logit_scale.float().exp().clamp(max=self.max_scale)  # type: ignore[assignment]
        with float32_math(*embeddings) as embeddings:
            # MultipleNegativesRankingLoss annotates labels as Tensor but never reads them (the trainer passes None).
            return super().compute_loss_from_embeddings(embeddings, cast(Tensor, labels))

    def embed_through_token_head(self, output: dict[str, Tensor]) -> Tensor:
        """The token head on every token of a model output, then the mean over unmasked tokens (B, hidden).

        Args:
            output: a model output with ``token_embeddings`` and ``attention_mask``.
        """
        assert self.head is not None  # only called with a token head
        tokens = self.head(output["token_embeddings"])
        mask = output["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        return (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)

    def get_config_dict(self) -> dict[str, Any]:
        scale = float(self.scale)
        if self.logit_scale is not None:  # the learned value now, not the one of the last forward pass
            scale = float(self.logit_scale.exp().clamp(max=self.max_scale))
        return {"temperature": 1.0 / scale, **super().get_config_dict(), "token_head": self.token_head}
