"""PixelLinguistConfig: the paper's curriculum and the checks of its stage fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, PixelLinguistConfig
from sbert_nonling.data.perturbations import PERTURBATIONS


def test_defaults_are_the_paper_curriculum():
    config = PixelLinguistConfig()
    assert METHOD_CONFIGS["pixel_linguist"] is PixelLinguistConfig
    assert (config.model, config.max_patches, config.text_loss.temperature, config.text_loss.token_head) == (
        "Team-PIXEL/pixel-base",
        64,
        0.05,
        "linear_gelu_layernorm",
    )
    # visual: lr 3e-6, bs 768, 1,300 steps per perturbation set; topical: lr 3e-5, bs 128; reasoning: 2,600 steps
    assert (config.visual.learning_rate, config.visual.batch_size, config.visual.max_steps) == (3e-6, 768, 1300)
    assert (config.topical.learning_rate, config.topical.batch_size) == (3e-5, 128)
    assert (config.reasoning.learning_rate, config.reasoning.batch_size, config.reasoning.max_steps) == (
        3e-5,
        128,
        2600,
    )
    assert (config.perturbation_rate, config.leapfrog_iterations) == (0.1, 0)
    assert all(
        len(names) == 1 and names[0] in PERTURBATIONS for names in config.perturbation_sets
    )  # one run per perturbation


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert len(check_own_fields(PixelLinguistConfig)) == 15
    with pytest.raises(ValueError, match=r"'perturbation_sets' must be list\[list\[str\]\], got \[\['swap', 3\]\]"):
        PixelLinguistConfig(perturbation_sets=[["swap", 3]])
