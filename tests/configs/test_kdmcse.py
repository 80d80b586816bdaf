"""KDMCSEConfig: the released wiki + Flickr30k BERT-base script."""

from __future__ import annotations

from sbert_nonling.configs import METHOD_CONFIGS, KDMCSEConfig, SingleRunConfig


def test_defaults_are_the_released_wiki_flickr_script():
    config = KDMCSEConfig()
    assert METHOD_CONFIGS["kdmcse"] is KDMCSEConfig
    # scripts/run_wiki_flickr.sh: bert-base-uncased, lr 3e-5, bs 64, 3 epochs, margin1 = margin2 = 0.15, lbd 0.01
    assert (config.model, config.learning_rate, config.batch_size, config.max_seq_length, config.epochs) == (
        "bert-base-uncased",
        3e-5,
        64,
        32,
        3,
    )
    assert (config.text_loss.margin, config.text_loss.temperature, config.text_loss.training_head) == (
        0.15,
        0.05,
        "mlp",
    )
    grounding = config.grounding
    assert (grounding.weight, grounding.temperature, grounding.margin, grounding.projection_dimension) == (
        0.01,
        0.05,
        0.15,
        256,
    )
    assert grounding.adaptive_margin and not grounding.filter  # --using_threshhold is not passed by the scripts
    assert (config.clip_encoder, config.clip_dimension, config.data) == ("clip-vit-large-patch14", 768, "text")


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(KDMCSEConfig) == {"text_loss", "epochs", "grounding"}
    assert KDMCSEConfig().eval_steps == SingleRunConfig().eval_steps == 125
