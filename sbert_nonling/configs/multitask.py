"""MultitaskConfig: contrastive pre-training, then task heads trained with a multi-task scheme."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sbert_nonling.configs.base import paper_default, setting
from sbert_nonling.configs.losses import SimCSELossConfig, TaskHeadsConfig
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.sentence_encoder import ModelOwnSetting, SentenceEncoderConfig
from sbert_nonling.configs.stage import StageConfig
from sbert_nonling.util.choices import MultiTaskScheme


@dataclass
class MultitaskConfig(SentenceEncoderConfig):
    """Multi-task contrastive training ("Contrastive Learning for Generalizable Sentence Embeddings", Stanford CS224N;
    the project's methods notes): stage 1 (``contrastive``) SimCSE at temperature 0.05 on NLI triplets, lr 3e-5, batch
    64; stage 2 (``multitask``) training-only task heads (hidden 768, dropout 0.3, the first layer shared by the pair
    tasks; the ``heads`` block) with the average loss (one batch of every task per optimizer step, which beat
    round-robin), lr 1e-5, batch 32; each stage a :class:`~sbert_nonling.configs.StageConfig`. Not given by the
    paper and chosen here: [CLS] pooling, max 128 tokens, 1 contrastive and 10 multi-task epochs, no warmup. See
    :class:`SentenceEncoderConfig`.

    Example::

        from sbert_nonling.configs import MultitaskConfig

        config = MultitaskConfig().replace(**{"heads.pair_head": "concat", "contrastive.max_steps": 0})
        print(config.stages()["contrastive"].max_steps)  # 0: stage 1 is left out
    """

    method: ClassVar[str] = "multitask"
    resumable: ClassVar[bool] = False

    max_seq_length: int = paper_default(SentenceEncoderConfig, "max_seq_length", 128)
    text_loss: SimCSELossConfig = paper_default(
        SentenceEncoderConfig, "text_loss", SimCSELossConfig(training_head="none")
    )
    keep_model_modules: list[ModelOwnSetting] = paper_default(SentenceEncoderConfig, "keep_model_modules", [])
    contrastive: StageConfig = setting(
        StageConfig(learning_rate=3e-5, batch_size=64, epochs=1), "stage 1: SimCSE on NLI triplets"
    )
    tasks: list[str] = setting(["classification", "pair_classification", "sts"], "stage 2 tasks (also: contrastive)")
    sts_sources: list[str] = setting(["stsb", "sick"], "training data of the sts task: stsb and / or sick")
    scheme: MultiTaskScheme = setting("average", "stage 2 task mixing: average, round_robin or proportional")
    heads: TaskHeadsConfig = setting(TaskHeadsConfig(), "the stage 2 task heads")
    multitask: StageConfig = setting(
        StageConfig(learning_rate=1e-5, batch_size=32, epochs=10), "stage 2: the task heads (batch per task)"
    )
    train_limit: int | None = setting(None, "examples read per training file (null: all)", minimum=1)
    tiny_encoder: dict[str, Any] = setting({}, "build_tiny_encoder arguments of a tiny:bert model")

    def trains_on(self, source: str) -> bool:
        """Every source but ``sts_dir``, whose task files only the ``multitask`` stage trains on (dev scores aside).

        Args:
            source: a :class:`~sbert_nonling.data.DataSources` field.
        """
        return source != "sts_dir" or self.multitask.max_steps != 0


register_method(
    MethodSpec(
        MultitaskConfig,
        builder="sbert_nonling.methods.multitask:build_multitask",
        training_sources=("text_file", "nli_file", "sts_dir"),
    )
)
