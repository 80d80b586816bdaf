"""GroundingConfig: MCSE's grounding row by default and the checks of the grounding / anchor fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import GroundingConfig


def test_defaults_are_mcse_s_grounding_without_anchor():
    config = GroundingConfig()
    paper = {
        "image_encoder": "resnet50",
        "image_dimension": 2048,
        "regions": False,
        "gradient_accumulation_steps": 1,
    }
    assert {key: getattr(config, key) for key in paper} == paper
    assert config.grounding.to_dict() == {
        "weight": 0.01,
        "direction": "text_to_image",
        "temperature": 0.05,
        "projection_dimension": 256,
        "projection_head": "mlp",
        "local_weight": 0.0,
    }
    # no anchor; MACD's anchor settings: KL at T = 2 weighted 5, token cosine weighted 1
    assert config.anchor.to_dict() == {"enabled": False, "kl_weight": 5.0, "cosine_weight": 1.0, "temperature": 2.0}


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert len(check_own_fields(GroundingConfig)) == 7
    with pytest.raises(ValueError, match=r"'direction' must be one of \['text_to_image', 'symmetric'\]"):
        GroundingConfig(grounding={"direction": "image_to_text"})
