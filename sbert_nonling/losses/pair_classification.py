"""Sentence-pair classification through a training-only head: bilinear (the paper's paraphrase head) or concat."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import SoftmaxLoss
from torch import Tensor, nn

from sbert_nonling.losses.head_layer import HeadLayer, HeadLayerLoss, build_head_layer
from sbert_nonling.util.choices import PairHead
from sbert_nonling.util.heads import embedding_dimension
from sbert_nonling.util.precision import float32_math

PAIR_HEADS: tuple[str, ...] = typing.get_args(PairHead)


class PairClassificationLoss(HeadLayerLoss, SoftmaxLoss):
    config_keys = ("pair_head", "hidden_dimension", "dropout")

    def __init__(
        self,
        model: SentenceTransformer,
        num_labels: int,
        pair_head: PairHead = "bilinear",
        hidden_dimension: int | None = 768,
        dropout: float = 0.3,
        head_layer: HeadLayer | None = None,
        loss_fct: Callable[[Tensor, Tensor], Tensor] | None = None,
    ) -> None:
        r"""Cross-entropy of a class predicted from a sentence pair by a training-only head.

        Both embeddings :math:`u, v` first pass the (optionally shared) hidden layer
        :math:`f(h) = \mathrm{Dropout}_p(\mathrm{ReLU}(W_1 h + b_1))`; then, for class :math:`c`:

        .. math::

            z_c = \begin{cases}
                f(u)^\top A_c\, f(v) + b_c & \text{pair\_head = "bilinear" (the paper's paraphrase head)} \\
                w_c^\top [f(u); f(v); |f(u) - f(v)|] + b_c & \text{pair\_head = "concat" (SBERT's SoftmaxLoss)}
            \end{cases}
            \qquad \ell = -\log \operatorname{softmax}(z)_y

        averaged over the batch. The head belongs to the loss (optimised and checkpointed by the trainer, never saved
        with the model). The classifier and the loss are computed in float32 under autocast (docs/reliability.md).

        Args:
            model: the SentenceTransformer to train.
            num_labels: number of classes (SICK entailment: 3; paper's paraphrase task: 2).
            pair_head: ``"bilinear"`` (default, the paper) or ``"concat"`` (SoftmaxLoss's classifier).
            hidden_dimension, dropout, head_layer, loss_fct: as
                :class:`~sbert_nonling.losses.SentenceClassificationLoss`;
                share ``head_layer`` with :class:`~sbert_nonling.losses.STSRegressionLoss`, as the paper does.

        References:
            - Contrastive Learning for Generalizable Sentence Embeddings (Stanford CS224N project report).
            - Reimers and Gurevych. Sentence-BERT. EMNLP 2019 (the ``(u, v, |u - v|)`` classifier).

        Inputs:
            +----------------------------+--------------------+
            | Texts                      | Labels             |
            +============================+====================+
            | (sentence_A, sentence_B)   | class id in [0, C) |
            +----------------------------+--------------------+

        Relations:
            - With ``pair_head="concat"`` and ``hidden_dimension=None`` it computes exactly its parent SoftmaxLoss.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses.pair_classification import PairClassificationLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                pairs = {
                    "sentence1": ["A man plays a guitar.", "A dog runs."],
                    "sentence2": ["A man plays music.", "A cat sleeps."],
                }
                loss = PairClassificationLoss(model, num_labels=3, pair_head="bilinear")
                train_dataset = Dataset.from_dict({**pairs, "label": [0, 2]})
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        if pair_head not in PAIR_HEADS:
            raise ValueError(f"pair_head={pair_head!r} must be one of {list(PAIR_HEADS)}.")
        if num_labels < 2:
            raise ValueError(f"num_labels={num_labels!r} must be at least 2.")
        head_layer = build_head_layer(model, hidden_dimension, dropout, head_layer)
        dimension = head_layer.hidden_dimension if head_layer is not None else embedding_dimension(model)
        loss_fct = loss_fct if loss_fct is not None else nn.CrossEntropyLoss()
        super().__init__(model, embedding_dimension=dimension, num_labels=num_labels, loss_fct=loss_fct)
        self.pair_head = pair_head
        self.store_head_layer(head_layer)
        if pair_head == "bilinear":  # replaces SoftmaxLoss's nn.Linear on (u, v, |u - v|); called as classifier(u, v)
            bilinear = nn.Bilinear(dimension, dimension, num_labels, device=model.device)
            self.classifier = bilinear  # type: ignore[assignment]

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        """The cross-entropy of the pair classifier on the two columns' embeddings (through the shared head layer).

        Args:
            embeddings: the two sentences' embeddings, (B, h) each.
            labels: the pair labels (B,).
        """
        self.check_batch(embeddings, labels, columns=2)
        hidden = [self.head_layer(embedding) for embedding in embeddings]  # (bs, hidden) each
        with float32_math(*hidden) as (u, v):
            if self.pair_head == "bilinear":
                logits = self.classifier(u, v)  # (bs, num_labels)
            else:
                parts = []
                if self.concatenation_sent_rep:
                    parts += [u, v]
                if self.concatenation_sent_difference:
                    parts.append(torch.abs(u - v))
                if self.concatenation_sent_multiplication:
                    parts.append(u * v)
                logits = self.classifier(torch.cat(parts, dim=1))  # (bs, num_labels)
            return self.loss_fct(logits, labels.view(-1).long())

    def get_config_dict(self) -> dict[str, Any]:
        return {**SoftmaxLoss.get_config_dict(self), **super().get_config_dict()}

    @property
    def citation(self) -> str:
        return super().citation + SoftmaxLoss.citation.__get__(self)
