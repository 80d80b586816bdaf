"""STS regression: cosine of head-transformed embeddings against the gold score (the paper's STS head)."""

from __future__ import annotations

import logging
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss
from torch import Tensor, nn

from sbert_nonling.losses.head_layer import MULTITASK_CITATION, HeadLayer
from sbert_nonling.util.heads import embedding_dimension
from sbert_nonling.util.precision import float32_math

logger = logging.getLogger(__name__)


class STSRegressionLoss(CosineSimilarityLoss):
    def __init__(
        self,
        model: SentenceTransformer,
        hidden_dimension: int | None = 768,
        dropout: float = 0.3,
        head_layer: HeadLayer | None = None,
        loss_fct: nn.Module | None = None,
    ) -> None:
        r"""Mean squared error between the cosine of two *transformed* embeddings and the normalised gold score.

        .. math::

            f(h) = \mathrm{Dropout}_p(\mathrm{ReLU}(W_1 h + b_1)), \qquad
            \ell = \frac{1}{B} \sum_{i=1}^{B} \left( \cos(f(u_i), f(v_i)) - y_i \right)^2

        with :math:`y_i \in [0, 1]` the gold score rescaled from its release range (STS-B 0-5, SICK relatedness 1-5;
        :func:`~sbert_nonling.data.tasks.sts_regression_dataset` does it). :math:`f` is a training-only layer owned by
        the loss (optimised and checkpointed, never saved with the model); the model's own embeddings — what STS
        evaluation measures — are shaped through it.

        Args:
            model: the SentenceTransformer to train.
            hidden_dimension: size of :math:`f`'s output (paper: 768); ``None``: no layer (plain cosine). Ignored when
                ``head_layer`` is given.
            dropout: dropout of the layer (paper: 0.3).
            head_layer: an existing :class:`HeadLayer`; pass the one given to
                :class:`~sbert_nonling.losses.PairClassificationLoss` to share the first layer between the pair tasks.
            loss_fct: regression loss on (cosine, score); default (None) MSE.

        References:
            - Contrastive Learning for Generalizable Sentence Embeddings (Stanford CS224N project report): STS head =
              cosine of transformed embeddings, its first layer shared with the paraphrase head.

        Requirements:
            1. Sentence pairs with a similarity score in [0, 1].

        Inputs:
            +----------------------------+----------------------+
            | Texts                      | Labels               |
            +============================+======================+
            | (sentence_A, sentence_B)   | float score in [0, 1]|
            +----------------------------+----------------------+

        Relations:
            - Subclass of :class:`~sentence_transformers.sentence_transformer.losses.CosineSimilarityLoss`; with
              ``hidden_dimension=None`` it is exactly that loss. It adds the (shareable) transformation :math:`f`,
              and computes the cosine and the regression loss in float32 under autocast (in float16 the cosine of an
              all-zero ReLU output is NaN; in bfloat16 cosines near 1 are 0.004 apart).
              For a ranking objective on the same data see
              :class:`~sentence_transformers.sentence_transformer.losses.CoSENTLoss`.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses.sts_regression import STSRegressionLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."], hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                train_dataset = Dataset.from_dict({
                    "sentence1": ["A plane is taking off.", "A man plays a flute."],
                    "sentence2": ["An air plane is taking off.", "A woman slices an onion."],
                    "score": [1.0, 0.05],
                })
                loss = STSRegressionLoss(model, hidden_dimension=32, dropout=0.3)  # 768 for BERT-base
                SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__(model, loss_fct=loss_fct if loss_fct is not None else nn.MSELoss())
        if head_layer is None and hidden_dimension is not None:
            head_layer = HeadLayer(embedding_dimension(model), hidden_dimension, dropout)
        self.head_layer = head_layer if head_layer is not None else nn.Identity()
        self.hidden_dimension = head_layer.hidden_dimension if head_layer is not None else None
        self.dropout = head_layer.dropout if head_layer is not None else 0.0

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        if len(embeddings) != 2:
            raise ValueError(f"{self.__class__.__name__} expects two text columns (a sentence pair), got {len(embeddings)}.")
        transformed = [self.head_layer(embedding) for embedding in embeddings]  # (bs, hidden) each
        with float32_math(*transformed) as transformed:  # CosineSimilarityLoss: loss_fct(cos(u, v), labels)
            return super().compute_loss_from_embeddings(transformed, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "hidden_dimension": self.hidden_dimension, "dropout": self.dropout}

    @property
    def citation(self) -> str:
        return MULTITASK_CITATION
