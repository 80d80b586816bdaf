"""StageConfig: one stage's optimizer settings, validated; capped keeps a left-out stage out."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import StageConfig


def test_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(StageConfig) == {"learning_rate", "batch_size", "epochs", "max_steps", "warmup_steps"}


def test_capped_stops_a_stage_at_most_after_the_steps_and_keeps_a_left_out_stage_out():
    assert StageConfig().capped(5).max_steps == 5  # -1: the epochs, now 5 steps
    assert StageConfig(max_steps=3).capped(5).max_steps == 3 and StageConfig(max_steps=9).capped(5).max_steps == 5
    assert StageConfig(max_steps=0).capped(5).max_steps == 0
    with pytest.raises(ValueError, match=r"StageConfig setting 'max_steps' must be >= -1, got -2"):
        StageConfig(max_steps=-2)
