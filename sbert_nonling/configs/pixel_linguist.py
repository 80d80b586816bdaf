"""PixelLinguistConfig: PIXEL reading rendered text, aligned visually, topically and by reasoning (Xiao et al., 2024)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sbert_nonling.configs.base import MethodConfig, paper_default, setting
from sbert_nonling.util.heads import TrainingHead


@dataclass
class PixelLinguistConfig(MethodConfig):
    """Pixel Linguist: defaults are the paper's curriculum (PIXEL-base, 64 patches, symmetric InfoNCE tau 0.05 with a
    training-only Linear + GELU + LayerNorm token head; visual alignment, one run per perturbation set at rate 0.1,
    weights averaged; topical alignment on wiki spans; reasoning alignment on NLI entailment pairs; optional
    cross-lingual leapfrogging). Each stage has its own ``<stage>_*`` optimizer settings.
    Paper: https://arxiv.org/abs/2402.08183. See :class:`~sbert_nonling.configs.base.MethodConfig`.
    """

    method: ClassVar[str] = "pixel_linguist"
    resumable: ClassVar[bool] = False
    #: ``token_head`` was a bool (true: the Linear + GELU + LayerNorm head).
    renamed_settings: ClassVar[dict[str, tuple[str, dict[Any, Any] | None]]] = {
        "token_head": ("token_head", {True: "linear_gelu_layernorm", False: "none"}),
    }

    model: str = paper_default(MethodConfig, "model", "Team-PIXEL/pixel-base")
    eval_steps: int = paper_default(MethodConfig, "eval_steps", 100)
    max_patches: int = setting(64, "16 x 16 patches per rendered sentence", minimum=2)
    temperature: float = setting(0.05, "temperature of the symmetric InfoNCE softmax", above=0.0)
    token_head: TrainingHead = setting(
        "linear_gelu_layernorm", "training-only head on every patch token before pooling (dropped at inference), or none"
    )
    perturbation_sets: list[list[str]] = setting(
        [["insert"], ["delete"], ["substitute_visual"], ["substitute_keyboard"], ["swap"], ["shuffle"], ["conditional_shuffle"]],
        "visual stage: one run per set of perturbation names, weights averaged",
    )
    perturbation_rate: float = setting(0.1, "share of characters / words each perturbation touches", minimum=0.0, maximum=1.0)
    visual_learning_rate: float = setting(3e-6, "visual stage learning rate", minimum=0.0)
    visual_batch_size: int = setting(768, "visual stage batch size", minimum=1)
    visual_max_steps: int = setting(1300, "visual stage steps per run", minimum=0)
    visual_warmup_steps: int = setting(0, "visual stage warmup steps", minimum=0)
    topical_learning_rate: float = setting(3e-5, "topical stage learning rate", minimum=0.0)
    topical_batch_size: int = setting(128, "topical stage batch size", minimum=1)
    topical_max_steps: int = setting(1300, "topical stage steps", minimum=0)
    topical_warmup_steps: int = setting(0, "topical stage warmup steps", minimum=0)
    span_min_words: int = setting(5, "shortest wiki span of the topical stage (words)", minimum=1)
    span_max_words: int = setting(64, "longest wiki span of the topical stage (words)", minimum=1)
    reasoning_learning_rate: float = setting(3e-5, "reasoning stage learning rate", minimum=0.0)
    reasoning_batch_size: int = setting(128, "reasoning stage batch size", minimum=1)
    reasoning_max_steps: int = setting(2600, "reasoning stage steps", minimum=0)
    reasoning_warmup_steps: int = setting(0, "reasoning stage warmup steps", minimum=0)
    leapfrog_iterations: int = setting(0, "cross-lingual leapfrogging iterations (0: none)", minimum=0)
    parallel_languages: list[str] = setting(["de", "es", "fr", "it", "nl", "pl", "pt", "ru", "zh"], "leapfrogging languages")
    parallel_learning_rate: float = setting(3e-5, "parallel (leapfrogging) stage learning rate", minimum=0.0)
    parallel_batch_size: int = setting(128, "parallel stage batch size", minimum=1)
    parallel_max_steps: int = setting(1300, "parallel stage steps", minimum=0)
    parallel_warmup_steps: int = setting(0, "parallel stage warmup steps", minimum=0)
    epochs: int = setting(1, "epochs per stage run (stages stop at their max_steps)", minimum=1)
    tiny_encoder: dict[str, Any] | None = setting(None, "PixelEncoder config of the tiny run's random encoder (null: Hub model)")
