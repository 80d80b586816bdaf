"""SimCSE's contrastive text loss: MultipleNegativesRankingLoss at temperature 0.05, with SimCSE's training-only MLP."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, cast

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor

from sbert_nonling.util.heads import TrainingHead, embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math

logger = logging.getLogger(__name__)


class SimCSELoss(MultipleNegativesRankingLoss):
    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = 0.05,
        training_head: TrainingHead = "mlp",
        gather_across_devices: bool = False,
    ) -> None:
        r"""SimCSE (Gao et al., 2021): InfoNCE over the batch with cosine similarity and temperature :math:`\tau`.

        For a batch of :math:`N` anchors :math:`h_i` with positives :math:`h_i^+` (and optional hard negatives
        :math:`h_i^-`), after the optional training-only head :math:`g` (``Linear(h, h) + Tanh`` on the pooled
        [CLS] vector):

        .. math::

            \ell_i = -\log \frac{e^{\cos(g(h_i), g(h_i^+)) / \tau}}
                {\sum_{j=1}^{N} \left( e^{\cos(g(h_i), g(h_j^+)) / \tau} + e^{\cos(g(h_i), g(h_j^-)) / \tau} \right)}

        (the :math:`h_j^-` term only with hard negatives), averaged over :math:`i`; one direction, anchor ->
        candidates, as in the paper.

        - Unsupervised SimCSE: the pair is the same sentence twice, ``(s, s)``; the two forward passes get
          different dropout masks, which is the only augmentation. The MLP head is used in training and dropped at
          inference (``training_head="mlp"``, the default): the model itself pools [CLS] as-is, so the saved model
          encodes exactly what the STS evaluator measured during training.
        - Supervised SimCSE: ``(anchor, entailment, contradiction)`` triplets; contradictions are extra in-batch
          negatives. The MLP is kept at inference, so it belongs in the model (``build_sentence_model(...,
          pooling="cls_mlp")``) and the loss adds none (``training_head="none"``).

        Args:
            model: the SentenceTransformer to train.
            temperature: :math:`\tau`, 0.05 in the paper (scale = 1 / temperature = 20).
            training_head: ``"mlp"`` applies a freshly initialised ``Linear(h, h) + Tanh`` to every embedding before
                the similarity, owned by this loss (optimised by the trainer, never part of the saved model);
                ``"none"`` uses the model's embeddings directly.
            gather_across_devices: gather embeddings from all processes (with gradients) so that negatives come
                from the global batch under DDP.

        References:
            - Gao, Yao, Chen. SimCSE: Simple Contrastive Learning of Sentence Embeddings. EMNLP 2021, Eq. 1 and 5.
              https://arxiv.org/abs/2104.08821

        Requirements:
            1. (anchor, positive) pairs or (anchor, positive, negative) triplets.
            2. Large batches help (paper: 64 unsupervised with BERT, 512 supervised).

        Inputs:
            +-------------------------------------------------+--------+
            | Texts                                           | Labels |
            +=================================================+========+
            | (sentence, same sentence) pairs (unsupervised)  | none   |
            +-------------------------------------------------+--------+
            | (anchor, entailment, contradiction) triplets    | none   |
            +-------------------------------------------------+--------+

        Recommendations:
            - Use ``BatchSamplers.NO_DUPLICATES`` so no sentence is its own in-batch negative.

        Relations:
            - Equals :class:`~sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss` with
              ``scale=1/temperature`` when ``training_head="none"``; adds the training-only MLP head of the paper,
              and computes the similarities, logits / temperature and logsumexp in float32 under autocast (a bfloat16
              logit near 1 / 0.05 = 20 is only 0.125 precise).

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses import SimCSELoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."], hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
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
        embeddings = [self.head(embedding) for embedding in embed_columns(self.model, sentence_features, separate_first=False)]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """MultipleNegativesRankingLoss's loss on the embeddings, computed in float32 under autocast."""
        with float32_math(*embeddings) as embeddings:
            # MultipleNegativesRankingLoss annotates labels as Tensor but never reads them (the trainer passes None).
            return super().compute_loss_from_embeddings(embeddings, cast(Tensor, labels))

    def compute_loss_from_outputs(self, outputs: list[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        """The loss from the model's outputs of each column (``outputs[i]["sentence_embedding"]``), through the training
        head: for wrappers that run the model themselves and share its outputs (:class:`DistillAnchorLoss`,
        :class:`MultimodalAlignLoss`)."""
        return self.compute_loss_from_embeddings([self.head(output["sentence_embedding"]) for output in outputs], labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "training_head": self.training_head,
            "gather_across_devices": self.gather_across_devices,
        }

    @property
    def citation(self) -> str:
        return """
@inproceedings{gao2021simcse,
    title = {{SimCSE}: Simple Contrastive Learning of Sentence Embeddings},
    author = {Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
    booktitle = {Empirical Methods in Natural Language Processing (EMNLP)},
    year = {2021},
    url = {https://arxiv.org/abs/2104.08821}
}
"""
