"""PixelLinguistConfig: the paper's curriculum (METHODS.md) and the checks of its stage fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, PixelLinguistConfig
from sbert_nonling.data.perturbations import PERTURBATIONS


def test_defaults_are_the_paper_curriculum():
    config = PixelLinguistConfig()
    assert METHOD_CONFIGS["pixel_linguist"] is PixelLinguistConfig
    assert (config.model, config.max_patches, config.temperature, config.token_head) == ("Team-PIXEL/pixel-base", 64, 0.05, True)
    # visual: lr 3e-6, bs 768, 1,300 steps per perturbation set; topical: lr 3e-5, bs 128; reasoning: 2,600 steps
    assert (config.visual_learning_rate, config.visual_batch_size, config.visual_max_steps) == (3e-6, 768, 1300)
    assert (config.topical_learning_rate, config.topical_batch_size) == (3e-5, 128)
    assert (config.reasoning_learning_rate, config.reasoning_batch_size, config.reasoning_max_steps) == (3e-5, 128, 2600)
    assert (config.perturbation_rate, config.leapfrog_iterations) == (0.1, 0)
    assert all(len(names) == 1 and names[0] in PERTURBATIONS for names in config.perturbation_sets)  # one run per perturbation


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_patches", 1, r"'max_patches' must be >= 2, got 1"),
        ("temperature", 0.0, r"'temperature' must be > 0.0, got 0.0"),
        ("perturbation_rate", 1.1, r"'perturbation_rate' must be >= 0.0 and <= 1.0, got 1.1"),
        ("visual_max_steps", -1, r"'visual_max_steps' must be >= 0, got -1"),
        ("span_min_words", 0, r"'span_min_words' must be >= 1, got 0"),
        ("parallel_languages", "de", r"'parallel_languages' must be list\[str\], got 'de' \(str\)"),
        ("tiny_encoder", "small", r"'tiny_encoder' must be dict\[str, Any\] or null, got 'small' \(str\)"),
    ],
)
def test_stage_fields_are_checked(key, value, message):
    with pytest.raises(ValueError, match=rf"PixelLinguistConfig setting {message}"):
        PixelLinguistConfig(**{key: value})
