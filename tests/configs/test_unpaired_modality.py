"""UnpairedModalityConfig: the modality side of VisualCSE / AudioCSE and the checks of its fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import UnpairedModalityConfig


def test_defaults_are_visualcse_bert_base_s_image_side():
    config = UnpairedModalityConfig()
    paper = {
        "modality": "image",
        "scheme": "alternating",
        "encoder_entry": "bypass",
        "modality_batch_size": 48,
        "modality_learning_rate": 1e-6,
        "modality_weight": 0.05,
        "token_keep_ratio": 1.0,
    }
    assert {key: getattr(config, key) for key in paper} == paper
    assert config.modality_loss.to_dict() == {"mode": "supcon", "temperature": 0.07}


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert len(check_own_fields(UnpairedModalityConfig)) == 8
    with pytest.raises(ValueError, match=r"'token_keep_ratio' must be > 0.0 and <= 1.0, got 1.5"):
        UnpairedModalityConfig(token_keep_ratio=1.5)
