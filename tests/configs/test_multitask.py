"""MultitaskConfig: the two stages' defaults (METHODS.md) and the checks of the task-head fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, MultitaskConfig


def test_defaults_are_contrastive_then_average_loss_task_heads():
    config = MultitaskConfig()
    assert METHOD_CONFIGS["multitask"] is MultitaskConfig
    assert (config.temperature, config.contrastive_learning_rate, config.contrastive_batch_size) == (0.05, 3e-5, 64)
    # heads hidden 768, dropout 0.3; the average loss beat round-robin; lr 1e-5
    assert (config.head_hidden_dimension, config.head_dropout, config.scheme, config.multitask_learning_rate) == (768, 0.3, "average", 1e-5)
    assert config.tasks == ["classification", "pair_classification", "sts"] and config.sts_sources == ["stsb", "sick"]
    assert (config.pair_head, config.share_head_layer, config.training_head, config.max_seq_length) == ("bilinear", True, "none", 128)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("scheme", "surgery", r"'scheme' must be one of \['average', 'round_robin', 'proportional'\], got 'surgery'"),
        ("pair_head", "mlp", r"'pair_head' must be one of \['bilinear', 'concat'\], got 'mlp'"),
        ("head_dropout", 1.2, r"'head_dropout' must be >= 0.0 and <= 1.0, got 1.2"),
        ("contrastive_max_steps", -2, r"'contrastive_max_steps' must be >= -1, got -2"),
        ("multitask_batch_size", 0, r"'multitask_batch_size' must be >= 1, got 0"),
        ("tasks", "sts", r"'tasks' must be list\[str\], got 'sts' \(str\)"),
        ("train_limit", 0, r"'train_limit' must be >= 1, got 0"),
        ("tiny_encoder", [], r"'tiny_encoder' must be dict\[str, Any\], got \[\] \(list\)"),
    ],
)
def test_task_fields_are_checked(key, value, message):
    with pytest.raises(ValueError, match=rf"MultitaskConfig setting {message}"):
        MultitaskConfig(**{key: value})
