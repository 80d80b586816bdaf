"""DALRConfig: the released wiki + Flickr30k BERT-base script with the paper's loss terms."""

from __future__ import annotations

import pytest

from sbert_nonling.configs import METHOD_CONFIGS, DALRConfig


def test_defaults_are_the_released_wiki_flickr_script_with_the_paper_s_terms():
    config = DALRConfig()
    assert METHOD_CONFIGS["dalr"] is DALRConfig
    # scripts/run_wiki_flickr.sh: lr 2e-5, batch 128, 4 epochs, max length 32; alpha 0.33, tau2 0.05, listmle
    assert (config.learning_rate, config.batch_size, config.epochs, config.max_seq_length) == (2e-5, 128, 4, 32)
    assert config.teacher_weights == [0.33, 0.67] and len(config.teachers) == 2
    ranking, alignment = config.ranking, config.alignment
    assert (ranking.kind, ranking.teacher_temperature, ranking.margin, ranking.epsilon) == ("listmle", 0.05, 0.0, 0.0)
    # released: L_cl + 0.1 (0.01 L_cons + L_CMA) + 0.2 (L_IMA + L_rank); the released-only terms off
    assert (alignment.cross_modal_weight, alignment.consistency_weight) == (0.1, 0.001)
    assert (ranking.weight, alignment.intra_modal_weight, alignment.kl_temperature) == (0.2, 0.2, 0.45)
    assert alignment.image_grounding_weight == alignment.token_grounding_weight == 0.0
    assert config.text_loss.margin == 0.0 and config.clip_dimension == 768


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(DALRConfig) == {
        "batch_size",
        "learning_rate",
        "epochs",
        "teachers",
        "teacher_weights",
        "ranking",
        "alignment",
    }


def test_teacher_weights_that_cannot_mix_scores_are_refused():
    for weights in ([-0.5, 1.5], [0.0, 0.0]):
        with pytest.raises(ValueError, match=r"'teacher_weights' .* must be at least 0 each, with a positive sum"):
            DALRConfig(teacher_weights=weights)
    assert DALRConfig(teacher_weights=[0.0, 1.0]).teacher_weights == [0.0, 1.0]
