"""KDMCSEConfig: MCSE's data with a frozen CLIP teacher setting the margins and negatives (Nguyen et al., 2024)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import paper_default, setting
from sbert_nonling.configs.clip_teacher import CLIPTeacherConfig
from sbert_nonling.configs.losses import SimCSELossConfig, TeacherGuidedAlignConfig
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig, SingleRunConfig


@dataclass
class KDMCSEConfig(CLIPTeacherConfig):
    """KDMCSE: defaults are the released wiki + Flickr30k BERT-base script (scripts/run_wiki_flickr.sh): SimCSE with
    a constant angular margin of 0.15 rad on every batch; on the interleaved caption batches (every caption of every
    image), plus 0.01 x the grounding in CLIP ViT-L/14's image and caption embeddings with the adaptive margin
    (0.15 rad), the teacher filter off; 3 epochs at lr 3e-5, batch 64, max length 32, no warmup. Paper: NAACL 2024,
    https://arxiv.org/abs/2403.17486. See :class:`CLIPTeacherConfig`."""

    method: ClassVar[str] = "kdmcse"

    text_loss: SimCSELossConfig = paper_default(SentenceEncoderConfig, "text_loss", SimCSELossConfig(margin=0.15))
    epochs: int = paper_default(SingleRunConfig, "epochs", 3)
    grounding: TeacherGuidedAlignConfig = setting(
        TeacherGuidedAlignConfig(), "the caption <-> CLIP term (TeacherGuidedAlignLoss)"
    )


register_method(
    MethodSpec(
        KDMCSEConfig,
        builder="sbert_nonling.methods.kdmcse:build_kdmcse",
        training_sources=("text_file", "nli_file", "image_dir", "captions_file", "image_features"),
    )
)
