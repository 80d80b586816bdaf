"""MACDConfig: the paper's row and the warmup fraction's range."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, MACDConfig


def test_defaults_are_the_paper_row():
    config = MACDConfig()
    assert METHOD_CONFIGS["macd"] is MACDConfig
    # Flickr30k captions only, bs 64 x grad-accum 8, 10 epochs, lr 1e-4 with 10% warmup, max len 32
    assert (
        config.data,
        config.batch_size,
        config.gradient_accumulation_steps,
        config.epochs,
        config.learning_rate,
    ) == ("captions", 64, 8, 10, 1e-4)
    assert (config.warmup_steps, config.max_seq_length) == (0.1, 32)  # a fraction of the training steps
    # symmetric global grounding, linear heads to 768, cosine x 10 (tau 0.1), word-region term on the region grid
    grounding = config.grounding
    assert (grounding.direction, grounding.projection_dimension, grounding.projection_head, grounding.temperature) == (
        "symmetric",
        768,
        "linear",
        0.1,
    )
    assert (config.regions, grounding.local_weight, grounding.weight, config.text_loss.training_head) == (
        True,
        1.0,
        1.0,
        "none",
    )
    # anchored to the frozen starting model, position embeddings frozen
    assert config.anchor.enabled and config.freeze_position_embeddings


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert len(check_own_fields(MACDConfig)) == 10  # its paper defaults keep the base fields' ranges
    with pytest.raises(ValueError, match=r"MACDConfig setting 'warmup_steps' must be >= 0.0, got -0.5"):
        MACDConfig(warmup_steps=-0.5)
