"""SimCSE's contrastive text loss: MultipleNegativesRankingLoss at temperature 0.05, with SimCSE's training MLP."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor

from sbert_nonling.losses.angular_margin import angular_margin_logits
from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.choices import TrainingHead
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.similarity import cosine_similarity


class SimCSELoss(LossConfig, MultipleNegativesRankingLoss):
    config_keys = ("temperature", "training_head", "margin", "gather_across_devices")
    bibtex_keys = ("gao2021simcse",)

    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = 0.05,
        training_head: TrainingHead = "mlp",
        margin: float = 0.0,
        gather_across_devices: bool = False,
    ) -> None:
        r"""SimCSE (Gao et al., 2021): InfoNCE over the batch with cosine similarity and temperature :math:`\tau`.

        For :math:`N` anchors :math:`h_i` with positives :math:`h_i^+` (and optional hard negatives :math:`h_i^-`),
        after the optional training-only head :math:`g` (``Linear(h, h) + Tanh`` on the pooled [CLS] vector):

        .. math::

            \ell_i = -\log \frac{e^{\cos(g(h_i), g(h_i^+)) / \tau}}
                {\sum_{j=1}^{N} \left( e^{\cos(g(h_i), g(h_j^+)) / \tau} + e^{\cos(g(h_i), g(h_j^-)) / \tau} \right)}

        averaged over :math:`i`; one direction, anchor -> candidates, as in the paper. With an angular ``margin``
        :math:`m > 0` (KDMCSE's text term), each negative whose angle :math:`\theta = \arccos \cos(\cdot)` to the
        anchor exceeds :math:`m` enters the softmax as :math:`\cos(\theta - m) / \tau`: negatives count as if
        :math:`m` radians closer, the positive is unchanged
        (:func:`~sbert_nonling.losses.angular_margin.angular_margin_logits`). Unsupervised SimCSE trains on
        ``(s, s)`` pairs (dropout is the augmentation) with the loss's MLP head, dropped at inference; supervised
        SimCSE on ``(anchor, entailment, contradiction)`` triplets with the MLP in the model (``pooling="cls_mlp"``,
        ``training_head="none"``); see docs/simcse.md.

        Args:
            model: the SentenceTransformer to train.
            temperature: :math:`\tau`, 0.05 in the paper (scale = 1 / temperature = 20).
            training_head: ``"mlp"``: a fresh ``Linear(h, h) + Tanh`` on every embedding, owned by this loss (never
                saved with the model); ``"none"``: the model's embeddings.
            margin: :math:`m`, the angular margin in radians on the negatives (0: plain SimCSE; KDMCSE: 0.15).
            gather_across_devices: under DDP, negatives from every process's batch (with gradients); not with a
                margin.

        References:
            - Gao, Yao, Chen. SimCSE: Simple Contrastive Learning of Sentence Embeddings. EMNLP 2021, Eq. 1 and 5.
              https://arxiv.org/abs/2104.08821
            - The margin: Nguyen et al. KDMCSE: Knowledge Distillation Multimodal Sentence Embeddings with Adaptive
              Angular margin Contrastive Learning. NAACL 2024. https://arxiv.org/abs/2403.17486

        Inputs:
            +-------------------------------------------------+--------+
            | Texts                                           | Labels |
            +=================================================+========+
            | (sentence, same sentence) pairs (unsupervised)  | none   |
            +-------------------------------------------------+--------+
            | (anchor, entailment, contradiction) triplets    | none   |
            +-------------------------------------------------+--------+

        Relations:
            - Equals :class:`~sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss` with
              ``scale=1/temperature`` when ``training_head="none"``, computed in float32 under autocast
              (docs/reliability.md).

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses import SimCSELoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                train_dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences})
                loss = SimCSELoss(model, temperature=0.05, training_head="mlp")
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        if temperature <= 0:
            raise ValueError(f"temperature={temperature!r} must be positive (SimCSE uses 0.05).")
        if margin < 0:
            raise ValueError(f"margin={margin!r} must be 0 (none) or a positive angle in radians (KDMCSE: 0.15).")
        if margin and gather_across_devices:
            raise ValueError("SimCSELoss: an angular margin takes its negatives from this process's batch only.")
        # cosine_similarity, not sentence-transformers' cos_sim: the same numbers without the Tensor.to_dense() whose
        # gradient a compiled graph drops on torch 2.11 / 2.12 (sbert_nonling/util/similarity.py)
        super().__init__(
            model,
            scale=1.0 / temperature,
            similarity_fct=cosine_similarity,
            gather_across_devices=gather_across_devices,
        )
        self.training_head = training_head
        self.margin = margin
        self.head = make_training_head(training_head, embedding_dimension(model))

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        # (bs, dim) per column: anchor, positive, optional negatives; all sentences, so one merged forward pass
        embeddings = [
            self.head(embedding) for embedding in embed_columns(self.model, sentence_features, separate_first=False)
        ]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """MultipleNegativesRankingLoss's loss on the embeddings (with the angular margin when there is one), computed
        in float32 under autocast.

        Args:
            embeddings: the embeddings of each column, (B, d) each: anchors, positives, then any hard negatives.
            labels: unused (the positives are the diagonal).
        """
        with float32_math(*embeddings) as embeddings:
            if not self.margin:
                # MultipleNegativesRankingLoss annotates labels as Tensor but never reads them (the trainer: None)
                return super().compute_loss_from_embeddings(embeddings, cast(Tensor, labels))
            anchors, candidates = embeddings[0], torch.cat(embeddings[1:])
            # (bs, bs * (1 + negatives)): each anchor's positive on the diagonal of the first block
            logits = angular_margin_logits(cosine_similarity(anchors, candidates), self.margin, 1.0 / self.scale)
            return F.cross_entropy(logits, torch.arange(anchors.shape[0], device=anchors.device))

    def compute_loss_from_outputs(self, outputs: list[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        """The loss from the model's outputs of each column, through the training head: for wrappers that run the
        model themselves (:class:`DistillAnchorLoss`, :class:`MultimodalAlignLoss`).

        Args:
            outputs: the model's output of each column.
            labels: unused (SimCSE's positives are the diagonal).
        """
        return self.compute_loss_from_embeddings(
            [self.head(output["sentence_embedding"]) for output in outputs], labels
        )
