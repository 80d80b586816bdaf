"""Single-sentence classification through a training-only MLP head (the paper's sentiment head)."""

from __future__ import annotations

from collections.abc import Callable

from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from sbert_nonling.losses.head_layer import HeadLayer, HeadLayerLoss, build_head_layer
from sbert_nonling.util.heads import embedding_dimension
from sbert_nonling.util.precision import float32_math


class SentenceClassificationLoss(HeadLayerLoss, nn.Module):
    config_keys = ("num_labels", "hidden_dimension", "dropout")

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

        averaged over the batch. The head (:math:`f` and :math:`W_2`) belongs to this loss: optimised and checkpointed
        by the trainer, never saved with the model. The logits and the loss are computed in float32 under autocast
        (docs/reliability.md).

        Args:
            model: the SentenceTransformer to train.
            num_labels: number of classes :math:`C` (paper: 5 SST sentiment classes).
            hidden_dimension: size of the hidden layer (paper: 768); ``None``: the classifier sits directly on the
                embedding (logistic regression). Ignored when ``head_layer`` is given.
            dropout: dropout of the hidden layer (paper: 0.3).
            head_layer: an existing :class:`HeadLayer` to use (and share with other task losses) as :math:`f`.
            loss_fct: classification loss on (logits, labels); default (None) cross-entropy.

        References:
            - Contrastive Learning for Generalizable Sentence Embeddings (Stanford CS224N project report).

        Inputs:
            +---------------+--------------------------+
            | Texts         | Labels                   |
            +===============+==========================+
            | (sentence)    | class id in [0, C)       |
            +---------------+--------------------------+

        Relations:
            - :class:`~sentence_transformers.sentence_transformer.losses.SoftmaxLoss` is the pair version;
              sentence-transformers has no single-sentence classification loss. Multi-task use: docs/multitask.md.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer
                from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
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
        self.store_head_layer(build_head_layer(model, hidden_dimension, dropout, head_layer))
        self.classifier = nn.Linear(self.hidden_dimension or embedding_dimension(model), num_labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        """The cross-entropy of the classifier on the sentence embeddings (through the shared head layer).

        Args:
            embeddings: the sentence embeddings, one column (B, h).
            labels: the class labels (B,).
        """
        self.check_batch(embeddings, labels, columns=1)
        hidden = self.head_layer(embeddings[0])  # (bs, hidden)
        with float32_math(hidden) as (hidden,):
            logits = self.classifier(hidden)  # (bs, num_labels)
            return self.loss_fct(logits, labels.view(-1).long())
