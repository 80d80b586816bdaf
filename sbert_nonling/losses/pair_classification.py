"""Sentence-pair classification through a training-only head: bilinear (the paper's paraphrase head) or SBERT concat."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Literal

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses import SoftmaxLoss
from torch import Tensor, nn

from sbert_nonling.losses.head_layer import MULTITASK_CITATION, HeadLayer
from sbert_nonling.util.heads import embedding_dimension
from sbert_nonling.util.precision import float32_math

logger = logging.getLogger(__name__)

PairHead = Literal["bilinear", "concat"]
PAIR_HEADS: tuple[str, ...] = ("bilinear", "concat")


class PairClassificationLoss(SoftmaxLoss):
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

        averaged over the batch. The head (:math:`f`, :math:`A`, :math:`w`, :math:`b`) belongs to the loss: optimised
        and checkpointed by the trainer, never saved with the model. Under autocast the classifier (:math:`A` or
        :math:`w`) and the loss are computed in float32: ``nn.Bilinear`` has no autocast rule and refuses
        half-precision inputs with its float32 weights.

        Args:
            model: the SentenceTransformer to train.
            num_labels: number of classes (SICK entailment: 3; paper's paraphrase task: 2).
            pair_head: ``"bilinear"`` (default, the paper) or ``"concat"`` (SoftmaxLoss's classifier).
            hidden_dimension: size of the hidden layer (paper: 768); ``None``: no hidden layer. Ignored when
                ``head_layer`` is given.
            dropout: dropout of the hidden layer (paper: 0.3).
            head_layer: an existing :class:`HeadLayer`; pass the one given to
                :class:`~sbert_nonling.losses.STSRegressionLoss` to share the first head layer between the pair tasks,
                as the paper does.
            loss_fct: classification loss on (logits, labels); default (None) cross-entropy.

        References:
            - Contrastive Learning for Generalizable Sentence Embeddings (Stanford CS224N project report): bilinear
              paraphrase head, first MLP layer shared with the STS head, hidden 768, dropout 0.3.
            - Reimers and Gurevych. Sentence-BERT. EMNLP 2019 (the ``(u, v, |u - v|)`` classifier).

        Requirements:
            1. Sentence pairs with an integer class id.

        Inputs:
            +----------------------------+--------------------+
            | Texts                      | Labels             |
            +============================+====================+
            | (sentence_A, sentence_B)   | class id in [0, C) |
            +----------------------------+--------------------+

        Recommendations:
            - Share the first layer with the STS task (``head_layer=``) and train all tasks with the average scheme.

        Relations:
            - Subclass of :class:`~sentence_transformers.sentence_transformer.losses.SoftmaxLoss`; with
              ``pair_head="concat"`` and ``hidden_dimension=None`` it computes exactly SoftmaxLoss (its classifier on
              ``(u, v, |u - v|)``). It adds the hidden (shareable) layer and the bilinear head, and computes the
              classifier and the loss in float32 under autocast.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses.pair_classification import PairClassificationLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."], hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                train_dataset = Dataset.from_dict({
                    "sentence1": ["A man plays a guitar.", "A dog runs."],
                    "sentence2": ["A man plays music.", "A cat sleeps."],
                    "label": [0, 2],
                })
                loss = PairClassificationLoss(model, num_labels=3, pair_head="bilinear")
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        if pair_head not in PAIR_HEADS:
            raise ValueError(f"pair_head={pair_head!r} must be one of {list(PAIR_HEADS)}.")
        if num_labels < 2:
            raise ValueError(f"num_labels={num_labels!r} must be at least 2.")
        if head_layer is None and hidden_dimension is not None:
            head_layer = HeadLayer(embedding_dimension(model), hidden_dimension, dropout)
        dimension = head_layer.hidden_dimension if head_layer is not None else embedding_dimension(model)
        super().__init__(
            model,
            embedding_dimension=dimension,
            num_labels=num_labels,
            loss_fct=loss_fct if loss_fct is not None else nn.CrossEntropyLoss(),
        )
        self.pair_head = pair_head
        self.head_layer = head_layer if head_layer is not None else nn.Identity()
        self.hidden_dimension = head_layer.hidden_dimension if head_layer is not None else None
        self.dropout = head_layer.dropout if head_layer is not None else 0.0
        if pair_head == "bilinear":
            # SoftmaxLoss's classifier is an nn.Linear on (u, v, |u - v|); the bilinear head replaces it (and is
            # called as classifier(u, v) by this class's own compute_loss_from_embeddings).
            self.classifier = nn.Bilinear(dimension, dimension, num_labels, device=model.device)  # type: ignore[assignment]

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        # (bs, dim) per column: sentence_A, sentence_B
        return self.compute_loss_from_embeddings(embed_columns(self.model, sentence_features), labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        if len(embeddings) != 2:
            raise ValueError(f"{self.__class__.__name__} expects two text columns (a sentence pair), got {len(embeddings)}.")
        if labels is None or labels.numel() != embeddings[0].shape[0]:
            found = None if labels is None else tuple(labels.shape)
            raise ValueError(f"{self.__class__.__name__} expects {embeddings[0].shape[0]} labels (one per example), got {found}.")
        # (bs, hidden) each
        hidden = [self.head_layer(embedding) for embedding in embeddings]
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
        return {**super().get_config_dict(), "pair_head": self.pair_head, "hidden_dimension": self.hidden_dimension, "dropout": self.dropout}

    @property
    def citation(self) -> str:
        return MULTITASK_CITATION + super().citation
