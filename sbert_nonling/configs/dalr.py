"""DALRConfig: caption batches distilled from frozen text teachers and a CLIP, at two levels (He et al., 2025)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import paper_default, setting
from sbert_nonling.configs.clip_teacher import CLIPTeacherConfig
from sbert_nonling.configs.losses import DALRLossConfig, ListwiseDistillationConfig
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.sentence_encoder import SingleRunConfig


@dataclass
class DALRConfig(CLIPTeacherConfig):
    """DALR: defaults are the released wiki + Flickr30k BERT-base script (scripts/run_wiki_flickr.sh) with the paper's
    loss terms: SimCSE on every batch; on the interleaved caption batches (every caption), plus the ListMLE ranking of
    two frozen text teachers (SimCSE 0.33, DiffCSE 0.67, teacher temperature 0.05), the KL terms to the teachers' and
    to CLIP ViT-L/14's similarities and the caption-image consistency; 4 epochs at lr 2e-5, batch 128, max length 32.
    The released code adds an angular margin and two terms (:class:`DALRLossConfig` says how to switch them on).
    Paper: ACL 2025 Findings, https://arxiv.org/abs/2506.21096. See :class:`CLIPTeacherConfig`."""

    method: ClassVar[str] = "dalr"

    batch_size: int = paper_default(SingleRunConfig, "batch_size", 128)
    learning_rate: float = paper_default(SingleRunConfig, "learning_rate", 2e-5)
    epochs: int = paper_default(SingleRunConfig, "epochs", 4)
    # the text teachers
    teachers: list[str] = setting(
        ["princeton-nlp/unsup-simcse-bert-base-uncased", "voidism/diffcse-bert-base-uncased-sts"],
        "frozen text teachers (Hub names, folders or tiny:bert; [CLS] pooling unless a sentence-transformers model)",
    )
    teacher_weights: list[float] = setting([0.33, 0.67], "weight of each teacher's scores and embeddings")
    # the losses
    ranking: ListwiseDistillationConfig = setting(
        ListwiseDistillationConfig(), "the teachers' ranking term (ListwiseDistillationLoss)"
    )
    alignment: DALRLossConfig = setting(DALRLossConfig(), "the caption batches' alignment terms (DALRLoss)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.teachers or len(self.teacher_weights) != len(self.teachers):
            raise ValueError(
                f"{self._where()} setting 'teacher_weights' {self.teacher_weights} must give one weight per teacher "
                f"{self.teachers}."
            )
        if any(weight < 0 for weight in self.teacher_weights) or not sum(self.teacher_weights) > 0:
            raise ValueError(
                f"{self._where()} setting 'teacher_weights' {self.teacher_weights} must be at least 0 each, with a "
                "positive sum (they mix the teachers' scores)."
            )


register_method(
    MethodSpec(
        DALRConfig,
        builder="sbert_nonling.methods.dalr:build_dalr",
        training_sources=("text_file", "nli_file", "image_dir", "captions_file", "image_features"),
    )
)
