"""UnpairedModalityConfig: the modality side of VisualCSE / AudioCSE and the checks of its fields."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import UnpairedModalityConfig


def test_defaults_are_visualcse_bert_base_s_image_side():
    config = UnpairedModalityConfig()
    paper = {"modality": "image", "scheme": "alternating", "encoder_entry": "bypass", "modality_mode": "supcon",
             "modality_temperature": 0.07, "modality_batch_size": 48, "modality_learning_rate": 1e-6, "modality_weight": 0.05,
             "token_keep_ratio": 1.0}
    assert {key: getattr(config, key) for key in paper} == paper


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("modality", "video", r"'modality' must be one of \['image', 'audio'\], got 'video'"),
        ("scheme", "sum", r"'scheme' must be one of \['alternating', 'joint'\], got 'sum'"),
        ("encoder_entry", "inputs", r"'encoder_entry' must be one of \['embeddings', 'bypass'\]"),
        ("modality_mode", "triplet", r"'modality_mode' must be one of \['simclr', 'supcon', 'released_label_rank'\]"),
        ("modality_temperature", 0, r"'modality_temperature' must be > 0.0, got 0.0"),
        ("modality_batch_size", 0, r"'modality_batch_size' must be >= 1, got 0"),
        ("modality_weight", -0.1, r"'modality_weight' must be >= 0.0, got -0.1"),
        ("token_keep_ratio", 0.0, r"'token_keep_ratio' must be > 0.0 and <= 1.0, got 0.0"),
        ("token_keep_ratio", 1.5, r"'token_keep_ratio' must be > 0.0 and <= 1.0, got 1.5"),
    ],
)
def test_modality_fields_are_checked(key, value, message):
    with pytest.raises(ValueError, match=rf"UnpairedModalityConfig setting {message}"):
        UnpairedModalityConfig(**{key: value})
