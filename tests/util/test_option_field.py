"""option_field: the metadata the command line makes a flag from, and a path option's folder or file kind."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sbert_nonling.util.option_field import option_field


@dataclass(frozen=True)
class Options:
    words: str | None = option_field(None, "--words", "a text file", folder=False)
    corpus: str | None = option_field(None, "--corpus", "a folder of files", folder=True)
    seeds: tuple[int, ...] = option_field((), "--seeds", "not a path")


def test_each_field_carries_its_flag_help_and_for_a_path_its_kind():
    metadata = {item.name: dict(item.metadata) for item in dataclasses.fields(Options)}
    assert metadata == {
        "words": {"flag": "--words", "help": "a text file", "folder": False},
        "corpus": {"flag": "--corpus", "help": "a folder of files", "folder": True},
        "seeds": {"flag": "--seeds", "help": "not a path"},
    }
    assert Options() == Options(None, None, ())  # the defaults


def test_the_run_and_data_options_declare_every_field_with_it():
    from sbert_nonling.app.run_options import RunOptions
    from sbert_nonling.data.sources import DataSources

    for options in (RunOptions, DataSources):
        for item in dataclasses.fields(options):
            assert item.metadata["flag"].startswith("--") and item.metadata["help"], item.name
    paths = {item.name for item in dataclasses.fields(DataSources) if "folder" in item.metadata}
    assert "audio_label_regex" not in paths and {"text_file", "sts_dir", "image_dir"} <= paths
