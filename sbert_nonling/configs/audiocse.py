"""AudioCSEConfig: SimCSE plus SupCon on unpaired speech (Jian et al., 2022)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import paper_default, setting
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.unpaired_modality import UnpairedModality, UnpairedModalityConfig
from sbert_nonling.util.choices import AudioLayout


@dataclass
class AudioCSEConfig(UnpairedModalityConfig):
    """AudioCSE: defaults are the BERT-base row (kaldi fbank patches with SpecAugment, speaker = class, audio AdamW lr
    2e-7; text as SimCSE-unsup). Paper: https://arxiv.org/abs/2209.09433. See :class:`UnpairedModalityConfig`."""

    method: ClassVar[str] = "audiocse"

    modality: UnpairedModality = paper_default(UnpairedModalityConfig, "modality", "audio")
    modality_learning_rate: float = paper_default(UnpairedModalityConfig, "modality_learning_rate", 2e-7)
    modality_weight: float = paper_default(UnpairedModalityConfig, "modality_weight", 0.01)
    layout: AudioLayout = setting("released", "fbank patch layout: released (VisualCSE code) or ssast")
    freq_mask: int = setting(48, "SpecAugment frequency mask width (bins)", minimum=0)
    time_mask: int = setting(192, "SpecAugment time mask width (frames)", minimum=0)
    target_frames: int = setting(1024, "fbank frames per clip (padded / cut)", minimum=1)
    clips: int | None = setting(
        None, "clips read, the first in file order after clips_per_class (null: all)", minimum=1
    )
    clips_per_class: int | None = setting(None, "clips read per class, the first of each (null: all)", minimum=1)


register_method(
    MethodSpec(
        AudioCSEConfig,
        builder="sbert_nonling.methods.unpaired_modality:build_unpaired_modality",
        training_sources=("text_file", "nli_file", "audio_dir"),
    )
)
