"""The loss blocks of the method configs: their defaults, their checks and their place in a recipe."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import (
    AnchorConfig,
    GroundingLossConfig,
    MACDConfig,
    ModalityLossConfig,
    SimCSELossConfig,
    SymmetricInfoNCEConfig,
    TaskHeadsConfig,
    TeacherGuidedAlignConfig,
)

BLOCKS = [
    SimCSELossConfig,
    ModalityLossConfig,
    GroundingLossConfig,
    AnchorConfig,
    TeacherGuidedAlignConfig,
    TaskHeadsConfig,
    SymmetricInfoNCEConfig,
]


@pytest.mark.parametrize("block", BLOCKS, ids=[block.__name__ for block in BLOCKS])
def test_every_field_of_a_block_refuses_wrong_types_and_out_of_range_values(block, check_own_fields):
    assert check_own_fields(block) == set(block.field_names())


def test_a_recipe_gives_what_differs_in_a_block_and_the_rest_keeps_the_method_s_default():
    config = MACDConfig.from_dict({"grounding": {"weight": 0.5}, "anchor": {"kl_weight": 2.0}})
    assert (config.grounding.weight, config.grounding.direction, config.grounding.temperature) == (
        0.5,
        "symmetric",
        0.1,
    )
    assert (config.anchor.enabled, config.anchor.kl_weight) == (True, 2.0)
    assert config.replace(**{"grounding.temperature": 0.2}).grounding.weight == 0.5  # a dotted key keeps the others
    with pytest.raises(ValueError, match=r"'grounding.weights' is not a setting of GroundingLossConfig"):
        MACDConfig.from_dict({"grounding": {"weights": 1.0}})


def test_a_cosine_filter_threshold_outside_the_cosine_s_range_is_refused():
    with pytest.raises(ValueError, match=r"filter_threshold=5.0 must lie in \[-1, 1\] with filter_scores='cosine'"):
        TeacherGuidedAlignConfig(filter=True, filter_threshold=5.0)
    assert TeacherGuidedAlignConfig(filter_threshold=5.0, filter_scores="released_dot_product").filter_threshold == 5
