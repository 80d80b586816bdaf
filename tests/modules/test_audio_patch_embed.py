from __future__ import annotations

import numpy as np
import pytest
import torch
import torchaudio

from sbert_nonling import AudioPatchEmbed
from sbert_nonling.data.audio import read_audio
from sbert_nonling.models import build_sentence_model
from sbert_nonling.modules.shared_encoder import BYPASS_ENTRY_KEY


@pytest.fixture(scope="module")
def clip(data_dir):
    return read_audio(data_dir / "audio" / "fsdd" / "0_george_0.wav")  # 8 kHz mono int16 file


def test_fbank_uses_the_paper_settings(clip):
    module = AudioPatchEmbed(embedding_dimension=16)
    features = module.preprocess([clip])["input_features"]
    assert features.shape == (1, 128, 1024)
    waveform = torchaudio.functional.resample(torch.from_numpy(clip["array"]), 8000, 16000)
    reference = torchaudio.compliance.kaldi.fbank(
        (waveform - waveform.mean())[None],
        htk_compat=True,
        sample_frequency=16000,
        use_energy=False,
        window_type="hanning",
        num_mel_bins=128,
        dither=0.0,
        frame_shift=10,
    )
    frames = reference.shape[0]
    torch.testing.assert_close(features[0, :, :frames], reference.T)
    assert (features[0, :, frames:] == 0).all()  # padded to 1024 frames


def test_channels_rates_and_dtypes_are_normalised(clip):
    module = AudioPatchEmbed(embedding_dimension=16)
    mono_16k = torchaudio.functional.resample(torch.from_numpy(clip["array"]), 8000, 16000).numpy()
    stereo = np.stack([mono_16k, mono_16k], axis=1)  # (samples, channels)
    as_int16 = (mono_16k * 32767).astype(np.int16)
    rate_48k = torchaudio.functional.resample(torch.from_numpy(mono_16k), 16000, 48000).numpy().astype(np.float64)
    features = module.preprocess(
        [
            mono_16k,
            {"array": stereo, "sampling_rate": 16000},
            {"array": stereo.T, "sampling_rate": 16000},
            {"array": as_int16, "sampling_rate": 16000},
            {"array": rate_48k, "sampling_rate": 48000},
        ]
    )["input_features"]
    for index in (1, 2):
        torch.testing.assert_close(features[index], features[0])
    scaled = module.preprocess([as_int16.astype(np.float32) / 32768])["input_features"][
        0
    ]  # int16 PCM scaled to [-1, 1)
    torch.testing.assert_close(features[3], scaled)
    assert features.shape == (5, 128, 1024)


def test_long_audio_is_cut_to_the_target_frames():
    module = AudioPatchEmbed(embedding_dimension=16, target_frames=100)
    assert module.preprocess([np.random.default_rng(0).standard_normal(16000 * 3)])["input_features"].shape == (
        1,
        128,
        100,
    )


@pytest.mark.parametrize(
    ("audio", "message"),
    [
        (np.zeros(0), "audio 0 has shape"),
        (np.zeros(1), "audio 0 has 1 samples at 16 kHz"),
        (np.array([0.0, np.nan] * 400), "audio 0 contains NaN"),
        (np.array([0.0, np.inf] * 400), "audio 0 contains NaN or infinite"),
        (np.array(["a"] * 500), "audio 0 has dtype"),
        ({"array": np.zeros(1000)}, "expected 'array' and 'sampling_rate'"),
        ({"array": np.zeros(1000), "sampling_rate": 0}, "sampling_rate=0"),
        (np.zeros((2, 2, 500)), "audio 0 has shape"),
        ({"array": np.zeros(8000 * 601), "sampling_rate": 8000}, "at most 600 s"),
    ],
)
def test_bad_audio_is_named(audio, message):
    with pytest.raises(ValueError, match=message):
        AudioPatchEmbed(embedding_dimension=16).preprocess([audio])


def test_an_audio_file_path_is_refused_saying_how_to_read_it(tiny_encoder_dir, data_dir):
    """ST's router sends a string ending in .wav to the audio route: a sentence saying so, not "has shape ()"."""
    wav = data_dir / "audio" / "fsdd" / "0_george_0.wav"
    model = build_sentence_model(tiny_encoder_dir, front_ends={"audio": AudioPatchEmbed(embedding_dimension=32)})
    refusal = (
        r"audio 0 is a path \('.*0_george_0\.wav'\); the audio route takes waveforms, not files\. "
        r"Read it first: .*read_audio\(path\)"
    )
    with pytest.raises(ValueError, match=refusal):
        model.encode([str(wav)])
    with pytest.raises(ValueError, match=refusal):
        AudioPatchEmbed(embedding_dimension=16).preprocess([wav])
    assert model.encode([read_audio(wav)]).shape == (1, 32)  # read first, it encodes


def test_layouts_give_the_paper_token_counts():
    fbank = torch.randn(2, 128, 1024)
    released = AudioPatchEmbed(embedding_dimension=16, layout="released")({"input_features": fbank})[BYPASS_ENTRY_KEY]
    ssast = AudioPatchEmbed(embedding_dimension=16, layout="ssast")({"input_features": fbank})[BYPASS_ENTRY_KEY]
    assert released.shape == (2, 211, 16) and ssast.shape == (2, 513, 16)
    assert AudioPatchEmbed(embedding_dimension=16, layout="released").embeddings.position_embeddings is None


def test_ssast_layout_normalises_the_fbank():
    module = AudioPatchEmbed(embedding_dimension=16, layout="ssast")
    with torch.no_grad():
        module.embeddings.position_embeddings.zero_()
        module.embeddings.cls_token.zero_()
        tokens = module({"input_features": torch.full((1, 128, 1024), -4.2677393)})[BYPASS_ENTRY_KEY]
    torch.testing.assert_close(
        tokens[0, 1:], module.embeddings.patch_embeddings.projection.bias.expand(512, -1)
    )  # normalised input is all zero


def test_spec_augment_only_in_training():
    module = AudioPatchEmbed(embedding_dimension=16, freq_mask=48, time_mask=192)
    fbank = torch.randn(1, 128, 1024)
    module.eval()
    first, second = (module({"input_features": fbank})[BYPASS_ENTRY_KEY] for _ in range(2))
    torch.testing.assert_close(first, second)
    module.train()
    torch.manual_seed(0)
    assert not torch.allclose(module({"input_features": fbank})[BYPASS_ENTRY_KEY], first)


def test_model_encodes_audio_dicts_after_reload(tiny_encoder_dir, clip, tmp_path):
    from sentence_transformers import SentenceTransformer

    model = build_sentence_model(
        tiny_encoder_dir, front_ends={"audio": AudioPatchEmbed(embedding_dimension=32, layout="ssast")}
    )
    expected = model.encode([clip, clip])
    model.save(str(tmp_path))
    np.testing.assert_array_equal(
        SentenceTransformer(str(tmp_path), trust_remote_code=True).encode([clip, clip]), expected
    )


@pytest.mark.parametrize(("layout", "patches", "kept"), [("released", 50, 25), ("ssast", 128, 64)])
def test_patch_dropout_keeps_positioned_patches_in_training_only(layout, patches, kept):
    torch.manual_seed(0)
    module = AudioPatchEmbed(target_frames=256, embedding_dimension=16, layout=layout, token_keep_ratio=0.5)
    fbank = torch.randn(2, 128, 256)
    module.eval()
    full = module({"input_features": fbank})[BYPASS_ENTRY_KEY]
    module.train()
    torch.manual_seed(3)
    features = module({"input_features": fbank})
    torch.manual_seed(3)  # the draw patch dropout made: its kept patches, in grid order after [CLS]
    kept_positions = torch.rand(2, patches).topk(kept, dim=1).indices.sort(dim=1).values + 1
    assert full.shape == (2, 1 + patches, 16) and features["attention_mask"].shape == (2, 1 + kept)
    for row in range(2):  # the full forward's tokens at those places, their positions included
        torch.testing.assert_close(features[BYPASS_ENTRY_KEY][row], full[row, [0, *kept_positions[row].tolist()]])


def test_token_keep_ratio_round_trips_and_is_checked(tiny_encoder_dir, clip, tmp_path):
    from sentence_transformers import SentenceTransformer

    model = build_sentence_model(
        tiny_encoder_dir,
        front_ends={"audio": AudioPatchEmbed(target_frames=256, embedding_dimension=32, token_keep_ratio=0.25)},
    )
    expected = model.encode([clip])
    model.save(str(tmp_path))
    reloaded = SentenceTransformer(str(tmp_path), trust_remote_code=True)
    assert reloaded[0].sub_modules["audio"][0].token_keep_ratio == 0.25
    np.testing.assert_array_equal(reloaded.encode([clip]), expected)
    with pytest.raises(ValueError, match="token_keep_ratio=1.5 must be in"):
        AudioPatchEmbed(token_keep_ratio=1.5)


def test_a_front_end_without_a_width_takes_the_encoders(tiny_encoder_dir):
    model = build_sentence_model(
        tiny_encoder_dir, front_ends={"audio": AudioPatchEmbed(target_frames=64, layout="ssast")}
    )
    front_end = model[0].sub_modules["audio"][0]
    assert front_end.embedding_dimension == 32 and front_end.embeddings.position_embeddings.shape[-1] == 32
    assert model.encode([np.zeros(16000, dtype=np.float32)]).shape == (1, 32)
