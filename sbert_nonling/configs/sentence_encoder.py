"""SentenceEncoderConfig / SingleRunConfig: the settings shared by every method that trains a token encoder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from sbert_nonling.configs.base import MethodConfig, setting
from sbert_nonling.configs.losses import SimCSELossConfig
from sbert_nonling.util.choices import PoolingChoice

#: The settings of a sentence-transformers model that a continued model can keep as its own.
ModelOwnSetting = Literal["pooling", "max_seq_length"]

#: The training text: plain sentences (SimCSE-unsup), NLI triplets (SimCSE-sup), or captions only (MACD).
TextData = Literal["text", "nli", "captions"]


@dataclass
class SentenceEncoderConfig(MethodConfig):
    """The sentence model every token-encoder method builds (pooling, sequence length, what a sentence-transformers
    model keeps of its own) and its text contrastive loss (``text_loss``, :class:`SimCSELossConfig`); see
    :class:`MethodConfig`."""

    pooling: PoolingChoice = setting(
        "cls", "cls, cls_mlp (MLP kept at inference), mean or lasttoken (see keep_model_modules)"
    )
    max_seq_length: int = setting(32, "tokens per sentence", minimum=1)
    keep_model_modules: list[ModelOwnSetting] = setting(
        ["pooling", "max_seq_length"],
        "what a sentence-transformers --model keeps of its own: pooling (its Pooling / Dense / Normalize, prompts), "
        "max_seq_length; train_recipe leaves out those an override sets",
    )
    text_loss: SimCSELossConfig = setting(SimCSELossConfig(), "the text contrastive loss (SimCSELoss)")

    #: A tiny run starts from a small random BERT built offline from the training text (``tiny:bert``).
    tiny_defaults: ClassVar[dict[str, Any]] = {"model": "tiny:bert"}


@dataclass
class SingleRunConfig(SentenceEncoderConfig):
    """The one training run of a single-stage method: its data and the text optimizer's settings (what
    :func:`~sbert_nonling.training.training_arguments` reads as the run's)."""

    data: TextData = setting("text", "training text: text (sentences), nli (triplets) or captions (captions only)")
    batch_size: int = setting(64, "text batch size per device", minimum=1)
    learning_rate: float = setting(3e-5, "text (encoder) AdamW learning rate", minimum=0.0)
    epochs: int = setting(1, "passes over the training data (unless max_steps is set)", minimum=1)
    max_steps: int = setting(-1, "stop after this many optimizer steps (-1: run the epochs; 0 is refused)", minimum=-1)
    warmup_steps: float = setting(
        0, "linear warmup of the learning rate: steps, or a fraction of the training steps below 1", minimum=0.0
    )

    #: A small random encoder has no trained [CLS] (mean pooling), trains from scratch (a higher learning rate) and
    #: runs 200 steps with an evaluation every 50.
    tiny_defaults: ClassVar[dict[str, Any]] = {
        **SentenceEncoderConfig.tiny_defaults,
        "pooling": "mean",
        "learning_rate": 1e-4,
        "eval_steps": 50,
        "max_steps": 200,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_steps == 0:  # transformers would read 0 as "run the epochs"
            raise ValueError(f"{self._where()} setting 'max_steps' must be -1 (run the epochs) or at least 1, got 0.")
