"""GroundingConfig: MCSE's grounding row by default (METHODS.md) and the checks of the grounding / anchor fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import GroundingConfig


def test_defaults_are_mcse_s_grounding_without_anchor():
    config = GroundingConfig()
    paper = {"image_encoder": "resnet50", "image_dim": 2048, "regions": False, "grounding_weight": 0.01,
             "grounding_direction": "text_to_image", "grounding_temperature": 0.05, "projection_dim": 256,
             "head_activation": "tanh", "local_weight": 0.0, "anchor": False, "gradient_accumulation_steps": 1}
    assert {key: getattr(config, key) for key in paper} == paper
    # MACD's anchor settings: KL at T = 2 weighted 5, token cosine weighted 1
    assert (config.anchor_temperature, config.anchor_kl_weight, config.anchor_cosine_weight) == (2.0, 5.0, 1.0)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("grounding_direction", "image_to_text", r"'grounding_direction' must be one of \['text_to_image', 'symmetric'\]"),
        ("head_activation", "relu", r"'head_activation' must be one of \['tanh', 'none'\], got 'relu'"),
        ("grounding_temperature", 0.0, r"'grounding_temperature' must be > 0.0, got 0.0"),
        ("anchor_temperature", -2.0, r"'anchor_temperature' must be > 0.0, got -2.0"),
        ("grounding_weight", -0.01, r"'grounding_weight' must be >= 0.0, got -0.01"),
        ("gradient_accumulation_steps", 0, r"'gradient_accumulation_steps' must be >= 1, got 0"),
        ("projection_dim", 0, r"'projection_dim' must be >= 1, got 0"),
        ("image_dim", "2048", r"'image_dim' must be int, got '2048' \(str\)"),
        ("anchor", "yes", r"'anchor' must be bool, got 'yes' \(str\)"),
    ],
)
def test_grounding_fields_are_checked(key, value, message):
    with pytest.raises(ValueError, match=rf"GroundingConfig setting {message}"):
        GroundingConfig(**{key: value})
