"""MultitaskConfig: the two stages' defaults and the checks of the task-head fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, MultitaskConfig


def test_defaults_are_contrastive_then_average_loss_task_heads():
    config = MultitaskConfig()
    assert METHOD_CONFIGS["multitask"] is MultitaskConfig
    assert (config.text_loss.temperature, config.contrastive.learning_rate, config.contrastive.batch_size) == (
        0.05,
        3e-5,
        64,
    )
    # heads hidden 768, dropout 0.3; the average loss beat round-robin; lr 1e-5
    assert (config.heads.hidden_dimension, config.heads.dropout, config.scheme, config.multitask.learning_rate) == (
        768,
        0.3,
        "average",
        1e-5,
    )
    assert config.tasks == ["classification", "pair_classification", "sts"] and config.sts_sources == ["stsb", "sick"]
    assert (
        config.heads.pair_head,
        config.heads.share_head_layer,
        config.text_loss.training_head,
        config.max_seq_length,
    ) == (
        "bilinear",
        True,
        "none",
        128,
    )


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert len(check_own_fields(MultitaskConfig)) == 11
    with pytest.raises(
        ValueError, match=r"'scheme' must be one of \['average', 'round_robin', 'proportional'\], got 'surgery'"
    ):
        MultitaskConfig(scheme="surgery")
