"""SentenceEncoderConfig / SingleRunConfig: SimCSE's unsupervised BERT-base row and the checks of their fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import SentenceEncoderConfig, SingleRunConfig


def test_defaults_are_simcse_unsup_bert_base():
    assert SentenceEncoderConfig().model == "bert-base-uncased"
    config = SingleRunConfig()
    paper = {
        "pooling": "cls",
        "max_seq_length": 32,
        "data": "text",
        "batch_size": 64,
        "learning_rate": 3e-5,
        "epochs": 1,
        "max_steps": -1,
        "seed": 42,
        "eval_steps": 125,
        "lr_scheduler_type": "linear",
        "precision": "auto",
        "dataloader_num_workers": "auto",
        "dataloader_pin_memory": "auto",
    }
    assert {key: getattr(config, key) for key in paper} == paper
    assert (config.text_loss.temperature, config.text_loss.training_head) == (0.05, "mlp")


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(SentenceEncoderConfig) == {
        "pooling",
        "max_seq_length",
        "keep_model_modules",
        "text_loss",
    }
    assert check_own_fields(SingleRunConfig) == {
        "data",
        "batch_size",
        "learning_rate",
        "epochs",
        "max_steps",
        "warmup_steps",
    }
    with pytest.raises(ValueError, match=r"'data' must be one of \['text', 'nli', 'captions'\], got 'wiki'"):
        SingleRunConfig(data="wiki")


def test_max_steps_zero_is_refused_not_read_as_the_epochs():
    from sbert_nonling.app.recipes import load_recipe

    with pytest.raises(ValueError, match=r"setting 'max_steps' must be -1 \(run the epochs\) or at least 1, got 0"):
        load_recipe("simcse-unsup", overrides={"max_steps": 0})
    assert load_recipe("simcse-unsup", overrides={"max_steps": 1}).max_steps == 1
