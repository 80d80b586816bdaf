"""renamed_argument: the former name of an argument works with a FutureWarning; both names at once are refused."""

from __future__ import annotations

import warnings

import pytest

from sbert_nonling.util.deprecation import moved_names, renamed_argument


def test_the_new_name_passes_through_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert renamed_argument("Loss", "image_dim", None, "image_dimension", 8) == 8
        assert renamed_argument("Loss", "image_dim", None, "image_dimension", None) is None


def test_the_former_name_warns_and_its_values_are_translated():
    with pytest.warns(FutureWarning, match=r"Loss\(image_dim=...\) is deprecated: use image_dimension=..."):
        assert renamed_argument("Loss", "image_dim", 8, "image_dimension", None) == 8
    with pytest.warns(FutureWarning, match=r"Loss\(head_activation='tanh'\) is deprecated: use projection_head='mlp'"):
        assert renamed_argument("Loss", "head_activation", "tanh", "projection_head", None, {"tanh": "mlp"}) == "mlp"


def test_both_names_or_an_unknown_former_value_raise_a_value_error():
    with pytest.raises(ValueError, match="pass image_dimension=... only"):
        renamed_argument("Loss", "image_dim", 8, "image_dimension", 8)
    with pytest.raises(ValueError, match="head_activation='relu' must be one of \\['tanh'\\]"):
        renamed_argument("Loss", "head_activation", "relu", "projection_head", None, {"tanh": "mlp"})


def test_moved_names_warn_and_return_the_object_from_its_new_module():
    from sbert_nonling.training import loss_state

    getter = moved_names("old.place", {"loss_state_dict": "sbert_nonling.training.loss_state"})
    with pytest.warns(FutureWarning, match=r"old\.place\.loss_state_dict moved to sbert_nonling\.training\.loss_state\.loss_state_dict"):
        assert getter("loss_state_dict") is loss_state.loss_state_dict
    with pytest.raises(AttributeError, match="module 'old.place' has no attribute 'other'"):
        getter("other")
