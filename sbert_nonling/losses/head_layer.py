"""The first layer of a training-only task head; one instance may be shared by several task losses."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.heads import embedding_dimension


class HeadLayer(nn.Module):
    r"""First layer of a task head: :math:`f(h) = \mathrm{Dropout}_p(\mathrm{ReLU}(W h + b))`, ``W`` of shape
    (hidden_dimension, embedding_dimension).

    Maps sentence embeddings (B, embedding_dimension) to (B, hidden_dimension). It belongs to the task losses that use
    it (optimised and checkpointed with them, never saved with the model); pass the *same* instance to several losses
    to share it, as the paper shares the first MLP layer of its paraphrase and STS heads.

    Args:
        embedding_dimension: size of the model's sentence embedding (``model.get_embedding_dimension()``).
        hidden_dimension: output size; the paper uses 768.
        dropout: dropout probability after the activation; the paper uses 0.3.

    Example:
        ::

            import torch
            from sbert_nonling.losses.head_layer import HeadLayer

            layer = HeadLayer(embedding_dimension=32, hidden_dimension=64, dropout=0.3)
            assert layer(torch.randn(2, 32)).shape == (2, 64)
    """

    def __init__(self, embedding_dimension: int, hidden_dimension: int = 768, dropout: float = 0.3) -> None:
        super().__init__()
        if embedding_dimension <= 0 or hidden_dimension <= 0:
            raise ValueError(
                f"embedding_dimension={embedding_dimension!r} and hidden_dimension={hidden_dimension!r} must be "
                "positive."
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout={dropout!r} must be in [0, 1) (the paper uses 0.3).")
        self.embedding_dimension = embedding_dimension
        self.hidden_dimension = hidden_dimension
        self.dropout = dropout
        self.linear = nn.Linear(embedding_dimension, hidden_dimension)
        self.activation = nn.ReLU()
        self.dropout_layer = nn.Dropout(dropout)

    def forward(self, embeddings: Tensor) -> Tensor:
        """Linear, activation and dropout: (B, embedding_dimension) -> (B, hidden_dimension).

        Args:
            embeddings: sentence embeddings (B, embedding_dimension).
        """
        # (bs, embedding_dimension) -> (bs, hidden_dimension)
        return self.dropout_layer(self.activation(self.linear(embeddings)))

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "embedding_dimension": self.embedding_dimension,
            "hidden_dimension": self.hidden_dimension,
            "dropout": self.dropout,
        }


def build_head_layer(
    model: SentenceTransformer, hidden_dimension: int | None, dropout: float, head_layer: HeadLayer | None
) -> HeadLayer | None:
    """``head_layer`` if given, else a new one of width ``hidden_dimension`` on the model's embedding.

    Args:
        model: the SentenceTransformer whose embeddings the layer reads.
        hidden_dimension: the new layer's width; None: no layer (the classifier reads the embedding itself).
        dropout: the new layer's dropout.
        head_layer: an existing layer to share, or None.
    """
    if head_layer is None and hidden_dimension is not None:
        return HeadLayer(embedding_dimension(model), hidden_dimension, dropout)
    return head_layer


class HeadLayerLoss(LossConfig):
    """Mixin of the task losses: their (optionally shared) :class:`HeadLayer`, forward, batch checks and citation."""

    model: SentenceTransformer
    compute_loss_from_embeddings: Callable[[list[Tensor], Tensor], Tensor]

    bibtex_keys = ("cs224n_contrastive_generalizable",)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        """The task loss of a batch: each column through the model, then :meth:`compute_loss_from_embeddings`.

        Args:
            sentence_features: the tokenized columns of the batch.
            labels: the task labels (classes or similarity scores).
        """
        return self.compute_loss_from_embeddings(embed_columns(self.model, sentence_features), labels)

    def store_head_layer(self, head_layer: HeadLayer | None) -> None:
        """Keep ``head_layer`` (the identity when None) and its settings, for the config.

        Args:
            head_layer: the shared head layer, or None for none.
        """
        self.head_layer: nn.Module = head_layer if head_layer is not None else nn.Identity()
        self.hidden_dimension = head_layer.hidden_dimension if head_layer is not None else None
        self.dropout = head_layer.dropout if head_layer is not None else 0.0

    def check_batch(
        self, embeddings: list[Tensor], labels: Tensor | None, columns: int, check_labels: bool = True
    ) -> None:
        """Raise a ValueError unless the batch has ``columns`` text columns and, with ``check_labels``, one label per
        example.

        Args:
            embeddings: the batch's embeddings, one tensor per text column.
            labels: the batch's labels.
            columns: the number of text columns the loss takes.
            check_labels: whether to check the labels too.
        """
        if len(embeddings) != columns:
            expected = "one text column (a sentence)" if columns == 1 else "two text columns (a sentence pair)"
            raise ValueError(f"{type(self).__name__} expects {expected}, got {len(embeddings)}.")
        if check_labels and (labels is None or labels.numel() != embeddings[0].shape[0]):
            found = None if labels is None else tuple(labels.shape)
            raise ValueError(
                f"{type(self).__name__} expects {embeddings[0].shape[0]} labels (one per example), got {found}."
            )
