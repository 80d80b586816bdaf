"""SimCSE's contrastive text loss: MultipleNegativesRankingLoss at temperature 0.05, with SimCSE's training MLP."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.choices import TrainingHead
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math


class SimCSELoss(LossConfig, MultipleNegativesRankingLoss):
    config_keys = ("temperature", "training_head", "gather_across_devices")
    bibtex_keys = ("gao2021simcse",)

    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = 0.05,
        training_head: TrainingHead = "mlp",
        gather_across_devices: bool = False,
    ) -> None:
        r"""SimCSE (Gao et al., 2021): InfoNCE over the batch with cosine similarity and temperature :math:`\tau`.

        For :math:`N` anchors :math:`h_i` with positives :math:`h_i^+` (and optional hard negatives :math:`h_i^-`),
        after the optional training-only head :math:`g` (``Linear(h, h) + Tanh`` on the pooled [CLS] vector):

        .. math::

            \ell_i = -\log \frac{e^{\cos(g(h_i), g(h_i^+)) / \tau}}
                {\sum_{j=1}^{N} \left( e^{\cos(g(h_i), g(h_j^+)) / \tau} + e^{\cos(g(h_i), g(h_j^-)) / \tau} \right)}

        averaged over :math:`i`; one direction, anchor -> candidates, as in the paper. Unsupervised SimCSE trains on
        ``(s, s)`` pairs (dropout is the augmentation) with the loss's MLP head, dropped at inference; supervised
        SimCSE on ``(anchor, entailment, contradiction)`` triplets with the MLP in the model (``pooling="cls_mlp"``,
        ``training_head="none"``); see docs/simcse.md.

        Args:
            model: the SentenceTransformer to train.
            temperature: :math:`\tau`, 0.05 in the paper (scale = 1 / temperature = 20).
            training_head: ``"mlp"``: a fresh ``Linear(h, h) + Tanh`` on every embedding, owned by this loss (never
                saved with the model); ``"none"``: the model's embeddings.
            gather_across_devices: under DDP, negatives from every process's batch (with gradients).

        References:
            - Gao, Yao, Chen. SimCSE: Simple Contrastive Learning of Sentence Embeddings. EMNLP 2021, Eq. 1 and 5.
              https://arxiv.org/abs/2104.08821

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
        super().__init__(model, scale=1.0 / temperature, gather_across_devices=gather_across_devices)
        self.training_head = training_head
        self.head = make_training_head(training_head, embedding_dimension(model))

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        # (bs, dim) per column: anchor, positive, optional negatives; all sentences, so one merged forward pass
        embeddings = [
            self.head(embedding) for embedding in embed_columns(self.model, sentence_features, separate_first=False)
        ]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """MultipleNegativesRankingLoss's loss on the embeddings, computed in float32 under autocast."""
        with float32_math(*embeddings) as embeddings:
            # MultipleNegativesRankingLoss annotates labels as Tensor but never reads them (the trainer passes None).
            return super().compute_loss_from_embeddings(embeddings, cast(Tensor, labels))

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
