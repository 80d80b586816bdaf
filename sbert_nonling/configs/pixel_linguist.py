"""PixelLinguistConfig: PIXEL reading rendered text, aligned visually, topically and by reasoning (Xiao et al., 2024)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sbert_nonling.configs.base import MethodConfig, paper_default, setting
from sbert_nonling.configs.losses import SymmetricInfoNCEConfig
from sbert_nonling.configs.stage import StageConfig


@dataclass
class PixelLinguistConfig(MethodConfig):
    """Pixel Linguist: defaults are the paper's curriculum (PIXEL-base; visual, topical and reasoning alignment, then
    optional cross-lingual leapfrogging; METHODS.md), each stage a :class:`~sbert_nonling.configs.StageConfig`.
    Paper: https://arxiv.org/abs/2402.08183. See :class:`~sbert_nonling.configs.base.MethodConfig`."""

    method: ClassVar[str] = "pixel_linguist"
    resumable: ClassVar[bool] = False

    model: str = paper_default(MethodConfig, "model", "Team-PIXEL/pixel-base")
    eval_steps: int = paper_default(MethodConfig, "eval_steps", 100)
    max_patches: int = setting(64, "16 x 16 patches per rendered sentence", minimum=2)
    text_loss: SymmetricInfoNCEConfig = setting(SymmetricInfoNCEConfig(), "the pair loss of every stage")
    perturbation_sets: list[list[str]] = setting(
        [
            ["insert"],
            ["delete"],
            ["substitute_visual"],
            ["substitute_keyboard"],
            ["swap"],
            ["shuffle"],
            ["conditional_shuffle"],
        ],
        "visual stage: one run per set of perturbation names, weights averaged",
    )
    perturbation_rate: float = setting(
        0.1, "share of characters / words each perturbation touches", minimum=0.0, maximum=1.0
    )
    visual: StageConfig = setting(
        StageConfig(learning_rate=3e-6, batch_size=768, max_steps=1300), "visual alignment, per perturbation-set run"
    )
    topical: StageConfig = setting(
        StageConfig(learning_rate=3e-5, batch_size=128, max_steps=1300), "topical alignment on wiki spans"
    )
    span_min_words: int = setting(5, "shortest wiki span of the topical stage (words)", minimum=1)
    span_max_words: int = setting(64, "longest wiki span of the topical stage (words)", minimum=1)
    reasoning: StageConfig = setting(
        StageConfig(learning_rate=3e-5, batch_size=128, max_steps=2600), "reasoning alignment on NLI entailment pairs"
    )
    leapfrog_iterations: int = setting(0, "cross-lingual leapfrogging iterations (0: none)", minimum=0)
    parallel_languages: list[str] = setting(
        ["de", "es", "fr", "it", "nl", "pl", "pt", "ru", "zh"], "leapfrogging languages"
    )
    parallel: StageConfig = setting(
        StageConfig(learning_rate=3e-5, batch_size=128, max_steps=1300), "cross-lingual leapfrogging on parallel pairs"
    )
    tiny_encoder: dict[str, Any] | None = setting(
        None, "PixelEncoder config of the tiny run's random encoder (null: Hub model)"
    )
