"""VisualCSEConfig: the BERT-base row and the image route's checks."""

from __future__ import annotations

from sbert_nonling.configs import METHOD_CONFIGS, VisualCSEConfig


def test_defaults_are_the_bert_base_row():
    config = VisualCSEConfig()
    assert METHOD_CONFIGS["visualcse"] is VisualCSEConfig
    # text bs / text lr / image bs / image lr / weight: 64 / 3e-5 / 48 / 1e-6 / 0.05; ViT-B/16 in21k patches at 224 px
    assert (
        config.batch_size,
        config.learning_rate,
        config.modality_batch_size,
        config.modality_learning_rate,
        config.modality_weight,
    ) == (
        64,
        3e-5,
        48,
        1e-6,
        0.05,
    )
    assert (config.vit, config.image_size, config.patch_size, config.images_per_class) == (
        "google/vit-base-patch16-224-in21k",
        224,
        16,
        None,
    )


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(VisualCSEConfig) == {"vit", "image_size", "patch_size", "images_per_class"}


def test_a_random_patch_embedding_is_vit_null():
    assert VisualCSEConfig.from_dict({"vit": None}).vit is None
