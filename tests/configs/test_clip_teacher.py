"""CLIPTeacherConfig: the CLIP teacher's settings KDMCSE and DALR share."""

from __future__ import annotations

from sbert_nonling.configs import CLIPTeacherConfig, DALRConfig, KDMCSEConfig


def test_the_teacher_is_clip_vit_large_patch14_as_in_both_released_codes():
    config = CLIPTeacherConfig()
    assert (config.clip_encoder, config.clip_dimension) == ("clip-vit-large-patch14", 768)
    assert issubclass(KDMCSEConfig, CLIPTeacherConfig) and issubclass(DALRConfig, CLIPTeacherConfig)


def test_own_fields_refuse_wrong_types_and_out_of_range_values(check_own_fields):
    assert check_own_fields(CLIPTeacherConfig) == {"clip_encoder", "clip_dimension"}
