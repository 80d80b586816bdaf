"""STS regression: cosine of head-transformed embeddings against the gold score (the paper's STS head)."""

from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss
from torch import Tensor, nn

from sbert_nonling.losses.head_layer import HeadLayer, HeadLayerLoss, build_head_layer
from sbert_nonling.util.precision import float32_math


class STSRegressionLoss(HeadLayerLoss, CosineSimilarityLoss):
    config_keys = ("hidden_dimension", "dropout")

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

        with :math:`y_i \in [0, 1]` the gold score rescaled from its release range
        (:func:`~sbert_nonling.data.tasks.sts_regression_dataset` does it). :math:`f` is a training-only layer owned by
        the loss (never saved with the model). The cosine and the loss are computed in float32 under autocast
        (docs/reliability.md).

        Args:
            model: the SentenceTransformer to train.
            hidden_dimension, dropout, head_layer: as :class:`~sbert_nonling.losses.SentenceClassificationLoss`;
                share ``head_layer`` with :class:`~sbert_nonling.losses.PairClassificationLoss`, as the paper does.
            loss_fct: regression loss on (cosine, score); default (None) MSE.

        References:
            - Contrastive Learning for Generalizable Sentence Embeddings (Stanford CS224N project report).

        Inputs:
            +----------------------------+----------------------+
            | Texts                      | Labels               |
            +============================+======================+
            | (sentence_A, sentence_B)   | float score in [0, 1]|
            +----------------------------+----------------------+

        Relations:
            - With ``hidden_dimension=None`` it is exactly its parent CosineSimilarityLoss.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses.sts_regression import STSRegressionLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
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
        self.store_head_layer(build_head_layer(model, hidden_dimension, dropout, head_layer))

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        self.check_batch(embeddings, labels, columns=2, check_labels=False)  # CosineSimilarityLoss checks the labels
        transformed = [self.head_layer(embedding) for embedding in embeddings]  # (bs, hidden) each
        with float32_math(*transformed) as transformed:  # CosineSimilarityLoss: loss_fct(cos(u, v), labels)
            return super().compute_loss_from_embeddings(transformed, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {**CosineSimilarityLoss.get_config_dict(self), **super().get_config_dict()}
