"""PixelLinguistConfig: PIXEL reads rendered text, aligned visually, topically and by reasoning (Xiao et al., 2024)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sbert_nonling.configs.base import MethodConfig, paper_default, setting
from sbert_nonling.configs.losses import SymmetricInfoNCEConfig
from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.stage import StageConfig


@dataclass
class PixelLinguistConfig(MethodConfig):
    """Pixel Linguist: defaults are the paper's curriculum on PIXEL-base (64 patches of 16 x 16 pixels per rendered
    sentence, symmetric InfoNCE at temperature 0.05 on the mean of the patch tokens after a training-only
    Linear + GELU + LayerNorm head): visual alignment (a sentence against a perturbed copy, lr 3e-6, batch 768, one run
    per perturbation set, weights averaged), topical alignment (two spans of one document, lr 3e-5, batch 128),
    reasoning alignment (NLI entailment pairs, lr 3e-5, batch 128, 2,600 steps), then optional cross-lingual
    leapfrogging; each stage a :class:`~sbert_nonling.configs.StageConfig`. Not given by the paper and chosen here:
    one visual run per perturbation kind at rate 0.1, topical and parallel stages of 1,300 steps, no warmup.
    Paper: https://arxiv.org/abs/2402.08183. See :class:`~sbert_nonling.configs.base.MethodConfig`.

    Example::

        from sbert_nonling.configs import PixelLinguistConfig

        config = PixelLinguistConfig(leapfrog_iterations=1, parallel_languages=["de"])
        print(config.text_loss.token_head, config.visual.batch_size)  # linear_gelu_layernorm 768
    """

    method: ClassVar[str] = "pixel_linguist"
    resumable: ClassVar[bool] = False

    #: A tiny run starts from a small random PIXEL-architecture encoder (``tiny:pixel``).
    tiny_defaults: ClassVar[dict[str, Any]] = {"model": "tiny:pixel"}

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
        None, "build_tiny_pixel sizes of a tiny:pixel model (null: its tiny defaults)"
    )

    def trains_on(self, source: str) -> bool:
        """Every source but ``stsb_multi_dir``, whose parallel pairs only leapfrogging trains on (multilingual dev
        scores aside).

        Args:
            source: a :class:`~sbert_nonling.data.DataSources` field.
        """
        return source != "stsb_multi_dir" or self.leapfrog_iterations > 0


register_method(
    MethodSpec(
        PixelLinguistConfig,
        builder="sbert_nonling.methods.pixel_linguist:build_pixel_linguist",
        training_sources=("text_file", "nli_file", "stsb_multi_dir"),
    )
)
