"""What a run says it will write: the saved forms of a model and the card form of each, derived from the model."""

from __future__ import annotations

from sbert_nonling import PixelEncoder
from sbert_nonling.app.plan_summary import saved_forms
from sbert_nonling.models import build_pixel_model


def test_a_text_model_is_saved_whole_and_exported_a_pixel_model_whole_only(tiny_model):
    assert saved_forms(tiny_model) == {"model": "full", "export": "text"}
    encoder = PixelEncoder.from_config(
        max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
    )
    assert saved_forms(build_pixel_model(encoder, max_patches=16)) == {"model": "pixel"}  # no text route to export
