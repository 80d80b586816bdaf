"""Assemble a SentenceTransformer around a ModalityRouter with the pooling choices of the papers."""

from __future__ import annotations

from typing import Literal

from sentence_transformers import SentenceTransformer, SentenceTransformerModelCardData
from sentence_transformers.base.modules import Dense, InputModule
from sentence_transformers.sentence_transformer.modules import Pooling
from torch import nn

from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.modules.shared_encoder import SharedEncoder

PoolingChoice = Literal["cls", "cls_mlp", "mean"]
POOLING_CHOICES: tuple[str, ...] = ("cls", "cls_mlp", "mean")


def build_sentence_model(
    encoder: str | SharedEncoder,
    pooling: PoolingChoice = "cls",
    max_seq_length: int | None = 32,
    front_ends: dict[str, InputModule] | None = None,
) -> SentenceTransformer:
    """``SentenceTransformer([ModalityRouter(text + front-ends -> shared encoder), Pooling, (Dense)])``.

    The pooling choices of the papers, and where each lives so that the saved model encodes exactly what was
    evaluated (no conversion script):

    ========================================  ======================  ============================================
    paper choice                              ``pooling``             training-only part
    ========================================  ======================  ============================================
    [CLS] + MLP in training only (unsup       ``"cls"``               the loss's head: ``SimCSELoss(...,
    SimCSE, "cls_before_pooler")                                      training_head="mlp")``, never saved
    [CLS] + MLP kept (sup SimCSE)             ``"cls_mlp"``           none: ``Dense(h, h, Tanh)`` is in the model
    [CLS] as-is                               ``"cls"``               none
    mean pooling                              ``"mean"``              none
    ========================================  ======================  ============================================

    Args:
        encoder: a Hub name or folder (loaded as :class:`SharedEncoder`), or a SharedEncoder.
        pooling: one of :data:`POOLING_CHOICES`.
        max_seq_length: tokenizer truncation length (SimCSE: 32); None keeps the tokenizer's.
        front_ends: extra modality routes, e.g. ``{"image": ImagePatchEmbed(...)}``.

    Example:
        ::

            from sbert_nonling.models import build_sentence_model

            model = build_sentence_model("bert-base-uncased", pooling="cls", max_seq_length=32)
            model.encode(["A man is playing a guitar."])
    """
    if pooling not in POOLING_CHOICES:
        raise ValueError(f"pooling={pooling!r} is not one of {list(POOLING_CHOICES)}.")
    if isinstance(encoder, str):
        encoder = SharedEncoder(encoder, max_seq_length=max_seq_length)
    elif max_seq_length is not None:
        encoder.max_seq_length = max_seq_length
    hidden_size = encoder.get_embedding_dimension()
    modules: list[nn.Module] = [
        ModalityRouter.from_encoder(encoder, front_ends=front_ends),
        Pooling(hidden_size, pooling_mode="mean" if pooling == "mean" else "cls"),
    ]
    if pooling == "cls_mlp":
        modules.append(Dense(hidden_size, hidden_size, activation_function=nn.Tanh()))
    return SentenceTransformer(modules=modules, model_card_data=SentenceTransformerModelCardData(local_files_only=True))
