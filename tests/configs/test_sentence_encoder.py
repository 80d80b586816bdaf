"""SentenceEncoderConfig / SingleRunConfig: SimCSE's unsupervised BERT-base row (METHODS.md) and the checks of their fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import SentenceEncoderConfig, SingleRunConfig


def test_defaults_are_simcse_unsup_bert_base():
    assert SentenceEncoderConfig().model == "bert-base-uncased"
    config = SingleRunConfig()
    paper = {"pooling": "cls", "training_head": "mlp", "temperature": 0.05, "max_seq_length": 32, "data": "text",
             "batch_size": 64, "learning_rate": 3e-5, "epochs": 1, "max_steps": -1, "seed": 42, "eval_steps": 125,
             "lr_scheduler_type": "linear", "fp16": True}
    assert {key: getattr(config, key) for key in paper} == paper


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_seq_length", 0, r"'max_seq_length' must be >= 1, got 0"),
        ("temperature", -0.05, r"'temperature' must be > 0.0, got -0.05"),
        ("training_head", "gelu", r"'training_head' must be one of \['mlp', 'linear_gelu_layernorm', 'none'\], got 'gelu'"),
        ("pooling", "max", r"'pooling' must be one of \['cls', 'cls_mlp', 'mean', 'lasttoken'\]"),
    ],
)
def test_sentence_encoder_fields_are_checked(key, value, message):
    with pytest.raises(ValueError, match=rf"SentenceEncoderConfig setting {message}"):
        SentenceEncoderConfig(**{key: value})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("data", "wiki", r"'data' must be one of \['text', 'nli', 'captions'\], got 'wiki'"),
        ("learning_rate", -1e-5, r"'learning_rate' must be >= 0.0, got -1e-05"),
        ("epochs", 0, r"'epochs' must be >= 1, got 0"),
        ("max_steps", 2.5, r"'max_steps' must be int, got 2.5 \(float\)"),
    ],
)
def test_single_run_fields_are_checked(key, value, message):
    with pytest.raises(ValueError, match=rf"SingleRunConfig setting {message}"):
        SingleRunConfig(**{key: value})
