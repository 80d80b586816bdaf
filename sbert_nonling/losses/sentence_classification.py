"""Single-sentence classification through a training-only MLP head (the paper's sentiment head)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import Tensor, nn

from sbert_nonling.losses.head_layer import MULTITASK_CITATION, HeadLayer
from sbert_nonling.util.heads import embedding_dimension
from sbert_nonling.util.precision import float32_math

logger = logging.getLogger(__name__)


class SentenceClassificationLoss(nn.Module):
    def __init__(
        self,
        model: SentenceTransformer,
        num_labels: int,
        hidden_dimension: int | None = 768,
        dropout: float = 0.3,
        head_layer: HeadLayer | None = None,
        loss_fct: Callable[[Tensor, Tensor], Tensor] | None = None,
    ) -> None:
        r"""Cross-entropy of a class predicted from one sentence embedding by a training-only MLP head.

        For a sentence embedding :math:`h` with class :math:`y \in \{0, \dots, C-1\}`:

        .. math::

            f(h) = \mathrm{Dropout}_p(\mathrm{ReLU}(W_1 h + b_1)), \qquad
            \ell = -\log \operatorname{softmax}(W_2 f(h) + b_2)_y

        averaged over the batch (:math:`W_1`: hidden x embedding, :math:`W_2`: C x hidden). The head (:math:`f` and
        :math:`W_2`) belongs to this loss: the trainer optimises and checkpoints it, the saved model never holds it.
        Gradients through the head shape the encoder so that the embedding separates the classes. Under autocast the
        logits (:math:`W_2`) and the loss are computed in float32, whatever precision :math:`f` ran in.

        Args:
            model: the SentenceTransformer to train.
            num_labels: number of classes :math:`C` (paper: 5 SST sentiment classes).
            hidden_dimension: size of the head's hidden layer (paper: 768); ``None`` puts the classifier directly on
                the embedding (no hidden layer, no dropout). Ignored when ``head_layer`` is given.
            dropout: dropout of the hidden layer (paper: 0.3).
            head_layer: an existing :class:`HeadLayer` to use (and share with other task losses) as :math:`f`.
            loss_fct: classification loss on (logits, labels); default (None) cross-entropy.

        References:
            - Contrastive Learning for Generalizable Sentence Embeddings (Stanford CS224N project report): the
              sentiment head, hidden size 768, dropout 0.3.

        Requirements:
            1. One sentence and an integer class id per example.

        Inputs:
            +---------------+--------------------------+
            | Texts         | Labels                   |
            +===============+==========================+
            | (sentence)    | class id in [0, C)       |
            +---------------+--------------------------+

        Recommendations:
            - In multi-task training combine it with the pair tasks through
              :class:`~sbert_nonling.training.multitask_sampler.MultiTaskAverageBatchSampler` (one batch of every
              task per optimizer step).

        Relations:
            - :class:`~sentence_transformers.sentence_transformer.losses.SoftmaxLoss` is the pair version (classifier
              on ``(u, v, |u - v|)``); sentence-transformers has no single-sentence classification loss, which is what
              this adds. With ``hidden_dimension=None`` the head is one linear layer (logistic regression).

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."], hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                train_dataset = Dataset.from_dict({"sentence": ["A great film.", "A dull film."], "label": [1, 0]})
                loss = SentenceClassificationLoss(model, num_labels=2)
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__()
        if num_labels < 2:
            raise ValueError(f"num_labels={num_labels!r} must be at least 2.")
        self.model = model
        self.num_labels = num_labels
        self.loss_fct = loss_fct if loss_fct is not None else nn.CrossEntropyLoss()
        if head_layer is None and hidden_dimension is not None:
            head_layer = HeadLayer(embedding_dimension(model), hidden_dimension, dropout)
        self.head_layer = head_layer if head_layer is not None else nn.Identity()
        self.hidden_dimension = head_layer.hidden_dimension if head_layer is not None else None
        self.dropout = head_layer.dropout if head_layer is not None else 0.0
        self.classifier = nn.Linear(self.hidden_dimension or embedding_dimension(model), num_labels)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        # (bs, dim): one column
        return self.compute_loss_from_embeddings(embed_columns(self.model, sentence_features), labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        if len(embeddings) != 1:
            raise ValueError(f"{self.__class__.__name__} expects one text column (a sentence), got {len(embeddings)}.")
        if labels is None or labels.numel() != embeddings[0].shape[0]:
            found = None if labels is None else tuple(labels.shape)
            raise ValueError(f"{self.__class__.__name__} expects {embeddings[0].shape[0]} labels (one per example), got {found}.")
        hidden = self.head_layer(embeddings[0])  # (bs, hidden)
        with float32_math(hidden) as (hidden,):
            logits = self.classifier(hidden)  # (bs, num_labels)
            return self.loss_fct(logits, labels.view(-1).long())

    def get_config_dict(self) -> dict[str, Any]:
        return {"num_labels": self.num_labels, "hidden_dimension": self.hidden_dimension, "dropout": self.dropout}

    @property
    def citation(self) -> str:
        return MULTITASK_CITATION
