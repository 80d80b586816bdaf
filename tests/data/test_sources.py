"""DataSources: one typed object for a run's data; card_lines names local files by file name, Hub datasets as given."""

from __future__ import annotations

import dataclasses

import pytest

from sbert_nonling.data import DataSources


def test_card_lines_name_local_files_by_file_name_and_hub_datasets_as_given(tmp_path):
    hub = "openslr/librispeech_asr?config=clean&split=train.100&label=speaker_id"  # a column role too
    data = DataSources(text_file=tmp_path / "corpus" / "wiki1m.txt", audio_dir=hub, sts_dir=tmp_path / "sts")
    assert data.card_lines("text_file", "nli_file", "audio_dir") == [
        "text_file: wiki1m.txt",
        f"audio_dir: {hub}",
    ]  # nli_file not given
    assert data.card_lines() == ["text_file: wiki1m.txt", "sts_dir: sts", f"audio_dir: {hub}"]


def test_sources_are_one_frozen_object():
    data = DataSources(text_file="wiki.txt")
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.text_file = "other.txt"  # type: ignore[misc]
    assert dataclasses.replace(data, nli_file="nli.csv") == DataSources(text_file="wiki.txt", nli_file="nli.csv")
