"""MCSEConfig: the wiki + Flickr30k BERT-base row."""

from __future__ import annotations

from sbert_nonling.configs import METHOD_CONFIGS, GroundingConfig, MCSEConfig


def test_defaults_are_the_wiki_flickr_row():
    config = MCSEConfig()
    assert METHOD_CONFIGS["mcse"] is MCSEConfig
    # bert-base-uncased, lr 3e-5, bs 64, max len 32, 3 epochs; SimCSE MLP for the text loss; lambda 0.01, tau' 0.05
    assert (config.model, config.learning_rate, config.batch_size, config.max_seq_length, config.epochs) == (
        "bert-base-uncased",
        3e-5,
        64,
        32,
        3,
    )
    assert (config.text_loss.training_head, config.data, config.warmup_steps) == ("mlp", "text", 0.0)
    differing = {
        key for key in GroundingConfig.field_names() if getattr(config, key) != getattr(GroundingConfig(), key)
    }
    assert differing == {"epochs"}  # MCSE is the grounding base with its own epoch count


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(MCSEConfig) == {"epochs"}
