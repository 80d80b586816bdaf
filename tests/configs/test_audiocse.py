"""AudioCSEConfig: the BERT-base row and the audio front-end's checks."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, AudioCSEConfig, VisualCSEConfig


def test_defaults_are_the_bert_base_row_and_differ_from_visualcse_only_on_the_audio_side():
    config = AudioCSEConfig()
    assert METHOD_CONFIGS["audiocse"] is AudioCSEConfig
    # AudioCSE BERT-base 64 / 3e-5 / 48 / 2e-7 / 0.01; SpecAugment 48 / 192 on 1024 fbank frames
    assert (config.modality, config.modality_learning_rate, config.modality_weight) == ("audio", 2e-7, 0.01)
    assert (config.freq_mask, config.time_mask, config.target_frames, config.layout, config.clips) == (
        48,
        192,
        1024,
        "released",
        None,
    )
    shared = set(VisualCSEConfig.field_names()) & set(AudioCSEConfig.field_names())
    differing = {key for key in shared if getattr(config, key) != getattr(VisualCSEConfig(), key)}
    assert differing == {"modality", "modality_learning_rate", "modality_weight"}


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    own = check_own_fields(AudioCSEConfig)
    assert own == {
        "modality",
        "modality_learning_rate",
        "modality_weight",
        "layout",
        "freq_mask",
        "time_mask",
        "target_frames",
        "clips",
        "clips_per_class",
    }
    with pytest.raises(ValueError, match=r"'layout' must be one of \['released', 'ssast'\], got 'ast'"):
        AudioCSEConfig(layout="ast")
