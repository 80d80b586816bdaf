"""The first layer of a training-only task head; one instance may be shared by several task losses."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn


class HeadLayer(nn.Module):
    r"""First layer of a task head: :math:`f(h) = \mathrm{Dropout}_p(\mathrm{ReLU}(W h + b))`, ``W`` of shape
    (hidden_dimension, embedding_dimension).

    Contract: maps sentence embeddings (B, embedding_dimension) to (B, hidden_dimension). It belongs to the task
    losses that use it (:class:`~sbert_nonling.losses.PairClassificationLoss`,
    :class:`~sbert_nonling.losses.STSRegressionLoss`, :class:`~sbert_nonling.losses.SentenceClassificationLoss`),
    is optimised and checkpointed with them (``NonLinguisticTrainer``) and never enters the saved model. Pass the
    *same* instance to several losses to share it: the paper shares the first MLP layer between its paraphrase and STS
    heads, so both tasks shape one transformation of the embedding.

    What it adds over sentence-transformers: its losses put their classifier directly on the embedding
    (``SoftmaxLoss``) or compare raw embeddings (``CosineSimilarityLoss``); this is the shared hidden layer between
    them.

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
            raise ValueError(f"embedding_dimension={embedding_dimension!r} and hidden_dimension={hidden_dimension!r} must be positive.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout={dropout!r} must be in [0, 1) (the paper uses 0.3).")
        self.embedding_dimension = embedding_dimension
        self.hidden_dimension = hidden_dimension
        self.dropout = dropout
        self.linear = nn.Linear(embedding_dimension, hidden_dimension)
        self.activation = nn.ReLU()
        self.dropout_layer = nn.Dropout(dropout)

    def forward(self, embeddings: Tensor) -> Tensor:
        # (bs, embedding_dimension) -> (bs, hidden_dimension)
        return self.dropout_layer(self.activation(self.linear(embeddings)))

    def get_config_dict(self) -> dict[str, Any]:
        return {"embedding_dimension": self.embedding_dimension, "hidden_dimension": self.hidden_dimension, "dropout": self.dropout}


#: BibTeX of the method the task heads come from (a Stanford CS224N project report; cited by every task loss).
MULTITASK_CITATION = """
@misc{cs224n_contrastive_generalizable,
    title = {Contrastive Learning for Generalizable Sentence Embeddings},
    howpublished = {Stanford CS224N (Natural Language Processing with Deep Learning) project report},
    note = {Multi-task BERT: contrastive pre-training, then sentiment / paraphrase / STS heads with an average loss}
}
"""
