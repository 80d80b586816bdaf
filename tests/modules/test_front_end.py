"""FrontEnd: the entry check, the token hand-off (with patch dropout in training only) and save / load."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sbert_nonling.modules.front_end import FrontEnd
from sbert_nonling.modules.shared_encoder import ENTRY_KEYS


class LinearFrontEnd(FrontEnd):
    """(B, 5, 4) inputs -> (B, 5, embedding_dimension) tokens: the smallest front-end built on FrontEnd."""

    def __init__(
        self, embedding_dimension: int = 6, encoder_entry: str = "bypass", token_keep_ratio: float = 1.0
    ) -> None:
        super().__init__(embedding_dimension, encoder_entry, token_keep_ratio)  # its config_keys: FrontEnd's
        self.build_token_layers()

    def build_token_layers(self):
        self.projection = nn.Linear(4, self.embedding_dimension)

    def preprocess(self, inputs, prompt=None, **kwargs):
        return {"pixel_values": torch.stack(list(inputs))}

    def forward(self, features, **kwargs):
        return self.hand_off(features, self.projection(features["pixel_values"]))


def test_an_unknown_entry_is_refused_listing_the_valid_ones():
    assert FrontEnd.check_entry("embeddings") == "embeddings"
    with pytest.raises(ValueError, match=r"encoder_entry='inputs' must be one of \['embeddings', 'bypass'\]"):
        LinearFrontEnd(encoder_entry="inputs")


@pytest.mark.parametrize("entry", ["embeddings", "bypass"])
def test_hand_off_writes_the_tokens_under_the_entry_key_with_a_full_mask(entry):
    front_end = LinearFrontEnd(encoder_entry=entry).eval()
    inputs = torch.randn(3, 5, 4)
    features = front_end(front_end.preprocess(inputs))
    torch.testing.assert_close(features[ENTRY_KEYS[entry]], front_end.projection(inputs))
    assert torch.equal(features["attention_mask"], torch.ones(3, 5, dtype=torch.long))
    assert front_end.get_embedding_dimension() == 6


def test_patch_dropout_applies_in_training_only_and_keeps_cls_first():
    front_end = LinearFrontEnd(token_keep_ratio=0.5)
    inputs = torch.randn(2, 5, 4)
    torch.manual_seed(0)
    trained = front_end.train()(front_end.preprocess(inputs))[ENTRY_KEYS["bypass"]]
    full = front_end.projection(inputs)
    assert trained.shape == (2, 1 + 2, 6)  # [CLS] + round(0.5 x 4) patches
    torch.testing.assert_close(trained[:, 0], full[:, 0])
    assert all(
        any(torch.equal(token, candidate) for candidate in full[row, 1:])
        for row in range(2)
        for token in trained[row, 1:]
    )
    assert front_end.eval()(front_end.preprocess(inputs))[ENTRY_KEYS["bypass"]].shape == (2, 5, 6)


def test_save_and_load_round_trip_the_config_and_the_weights(tmp_path):
    front_end = LinearFrontEnd(embedding_dimension=3, encoder_entry="embeddings", token_keep_ratio=0.75)
    front_end.save(str(tmp_path))
    loaded = LinearFrontEnd.load(str(tmp_path))
    assert (loaded.embedding_dimension, loaded.encoder_entry, loaded.token_keep_ratio) == (3, "embeddings", 0.75)
    assert torch.equal(loaded.projection.weight, front_end.projection.weight) and torch.equal(
        loaded.projection.bias, front_end.projection.bias
    )


@pytest.mark.parametrize(
    ("cls", "key", "value", "message"),
    [
        ("image", "patch_size", 0, r"patch_size=0 must be an integer from 1 to 32"),
        ("image", "image_size", 1_000_000, r"image_size=1000000 must be an integer from 1 to 8192"),
        ("image", "image_size", 8192, r"image_size=8192 / patch_size=16 makes 262144 patches; at most 65536"),
        ("image", "image_std", [0, 1, 1], r"image_std=\[0, 1, 1\] must be 3 finite numbers above 0"),
        ("image", "image_mean", "abc", r"image_mean='abc' must be 3 finite numbers"),
        ("image", "embedding_dimension", 1.5, r"embedding_dimension=1.5 must be an integer"),
        ("image", "num_channels", True, r"num_channels=True must be an integer"),
        ("image", "bogus", 1, r"unexpected keyword argument 'bogus'"),
        ("audio", "target_frames", 10**9, r"target_frames=1000000000 must be an integer from \d+ to 16384"),
        ("audio", "time_mask", -1, r"time_mask=-1 must be an integer from 0"),
    ],
)
def test_a_crafted_front_end_config_is_refused_at_load_naming_the_file_and_key(tmp_path, cls, key, value, message):
    import json

    from sbert_nonling.modules import AudioPatchEmbed, ImagePatchEmbed

    front_end = (
        ImagePatchEmbed(image_size=32, patch_size=16, embedding_dimension=8)
        if cls == "image"
        else AudioPatchEmbed(num_mel_bins=32, target_frames=48, embedding_dimension=8)
    )
    front_end.save(str(tmp_path))
    config_file = tmp_path / type(front_end).config_file_name
    config = json.loads(config_file.read_text())
    config[key] = value
    config_file.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=rf"{type(front_end).config_file_name}: .*{message}"):
        type(front_end).load(str(tmp_path))


#: tests/modules/saved_front_ends/: an image and two audio front-ends (both layouts) saved as folders, and
#: expected.safetensors: the inputs and the outputs they gave when they were saved (golden files).
SAVED = {"image": "ImagePatchEmbed", "audio_released": "AudioPatchEmbed", "audio_ssast": "AudioPatchEmbed"}


@pytest.mark.parametrize("name", list(SAVED))
def test_saved_front_ends_load_and_encode_as_they_did_when_saved(name):
    from pathlib import Path

    import numpy as np
    from safetensors.torch import load_file

    import sbert_nonling.modules as modules

    folder = Path(__file__).parent / "saved_front_ends"
    expected = {
        key.split(".", 1)[1]: value
        for key, value in load_file(folder / "expected.safetensors").items()
        if key.startswith(f"{name}.")
    }
    loaded = getattr(modules, SAVED[name]).load(str(folder / name)).eval()
    with torch.no_grad():
        if name == "image":  # at the trained size and at a larger grid (bicubic positions)
            for size in ("16", "24"):
                # the patch convolution's float math differs in its last bits between CPU kinds (AVX2, AVX-512)
                torch.testing.assert_close(
                    loaded({"pixel_values": expected[f"pixel_values_{size}"]})[ENTRY_KEYS["bypass"]],
                    expected[f"tokens_{size}"],
                    rtol=1e-5,
                    atol=1e-6,
                )
        else:  # the fbank and the tokens (the SSAST layout's rectangular position table); a DC offset, and 8 kHz
            waveform = np.random.default_rng(0).standard_normal(4800).astype(np.float32) + 0.25
            features = loaded.preprocess([waveform, {"array": waveform[::2].copy(), "sampling_rate": 8000}])
            # the fbank's float math differs in its last bits between CPU kinds (AVX2, AVX-512): close, not equal
            torch.testing.assert_close(features["input_features"], expected["input_features"], rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(
                loaded(features)[ENTRY_KEYS["bypass"]], expected["tokens"], rtol=1e-4, atol=1e-4
            )
