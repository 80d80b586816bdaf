from __future__ import annotations

from collections import Counter

import pytest

from sbert_nonling.data import audio_folder_dataset, label_from_regex, read_audio


def test_fsdd_speakers_are_the_labels(data_dir):
    dataset, speakers = audio_folder_dataset(
        data_dir / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=600
    )
    assert speakers == ["george", "jackson", "lucas", "nicolas", "theo", "yweweler"]
    row = dataset[0]
    assert row["view_1"] is row["view_2"]  # the same clip twice: dropout is the augmentation
    assert row["view_1"]["sampling_rate"] == 8000 and row["view_1"]["array"].ndim == 1 and row["label"] == 0


def test_a_limit_per_class_keeps_every_speaker(data_dir):
    """Issue 26: limit=64 kept the first files in sorted order, 2 of the 6 speakers (50 + 14 clips)."""
    label = label_from_regex(r"^\d+_([a-z]+)_")
    dataset, speakers = audio_folder_dataset(data_dir / "audio" / "fsdd", label, limit_per_class=5)
    assert len(speakers) == 6 and len(dataset) == 30
    assert sorted(Counter(dataset["label"]).values()) == [5] * 6
    first, _ = audio_folder_dataset(data_dir / "audio" / "fsdd", label, limit=64)
    assert sorted(Counter(first["label"]).values()) == [14, 50]
    capped, _ = audio_folder_dataset(data_dir / "audio" / "fsdd", label, limit=12, limit_per_class=5)
    assert capped["label"] == dataset["label"][:12]


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
