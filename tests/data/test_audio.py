from __future__ import annotations

import pytest

from sbert_nonling.data import audio_folder_dataset, label_from_regex, read_audio


def test_fsdd_speakers_are_the_labels(data_dir):
    dataset, speakers = audio_folder_dataset(data_dir / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=600)
    assert speakers == ["george", "jackson", "lucas", "nicolas", "theo", "yweweler"]
    row = dataset[0]
    assert row["view_1"] is row["view_2"]  # the same clip twice: dropout is the augmentation
    assert row["view_1"]["sampling_rate"] == 8000 and row["view_1"]["array"].ndim == 1 and row["label"] == 0


def test_label_pattern_and_decoding_errors(tmp_path):
    with pytest.raises(ValueError, match="needs a capture group"):
        label_from_regex(r"^\d+_")
    with pytest.raises(ValueError, match="does not match the label pattern"):
        label_from_regex(r"^(\d+)-")("0_george_1.wav")
    (tmp_path / "0_x_0.wav").write_bytes(b"RIFF....")
    with pytest.raises(ValueError, match=r"Cannot decode audio .*0_x_0.wav"):
        read_audio(tmp_path / "0_x_0.wav")
    dataset, _ = audio_folder_dataset(tmp_path, label_from_regex(r"^\d+_([a-z]+)_"))
    with pytest.raises(ValueError, match="Cannot decode audio"):
        dataset[0]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="No audio files"):
        audio_folder_dataset(tmp_path / "empty", label_from_regex(r"(x)"))
