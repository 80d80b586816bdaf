"""Input checks: lone surrogates replaced, lines split at \\n only, one ValueError naming each bad sentence or
input; destinations that cannot be written, occupied files and cut-short safetensors files named before any work."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from sbert_nonling.util.validation import (
    check_dry_run_target,
    check_file_target,
    check_safetensors_file,
    check_sentence,
    check_text_inputs,
    check_writable,
    replace_lone_surrogates,
    split_lines,
)


def test_lone_surrogates_become_the_replacement_character_and_pairs_are_joined():
    assert replace_lone_surrogates("plain") == "plain"
    assert replace_lone_surrogates("a\ud800b") == "a\ufffdb"
    assert replace_lone_surrogates("\ud83d\ude00") == "\U0001f600"  # a pair written as two code points: one emoji
    replace_lone_surrogates("x\udfff").encode("utf-8")  # encodable afterwards


def test_lines_split_at_newlines_only():
    assert split_lines("one\x0cstill one\u2028and\x1cmore\ntwo\n") == ["one\x0cstill one\u2028and\x1cmore", "two"]
    assert split_lines("a\n\nb") == ["a", "", "b"] and split_lines("") == []


@pytest.mark.parametrize(
    ("sentence", "message"),
    [
        (None, r"nli.csv:3 anchor is None; expected a non-empty string"),
        (7, r"nli.csv:3 anchor is a int \(7\); expected a non-empty string"),
        ("  \t", r"nli.csv:3 anchor is empty or whitespace-only \('  \\t'\)"),
    ],
)
def test_a_bad_sentence_is_named_where_it_came_from(sentence, message):
    with pytest.raises(ValueError, match=message):
        check_sentence(sentence, "nli.csv:3 anchor")
    assert check_sentence("A dog.", "x") == "A dog."


def test_text_inputs_are_named_by_index_and_blank_strings_are_valid():
    check_text_inputs(["", "  ", ("a", "b")])  # empty strings encode as the tokenizer encodes them
    with pytest.raises(ValueError, match=r"input 1 is None; expected a string"):
        check_text_inputs(["fine", None])
    with pytest.raises(ValueError, match=r"sentence 2 holds a float \(1\.5\); expected a string"):
        check_text_inputs(["a", ("b", "c"), ("d", 1.5)], source="sentence")


def read_only_folder(tmp_path):
    """A folder nobody may write into: for root, who writes through permission bits, /sys (refused to everyone)."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    return folder


def test_a_destination_that_cannot_be_written_is_named_without_creating_anything(tmp_path):
    read_only = read_only_folder(tmp_path)
    with pytest.raises(ValueError, match=r"Cannot write into --output '.*features.safetensors' \(.*\); choose a"):
        check_writable(read_only / "features.safetensors", "--output")
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ValueError, match="a-file is a file, not a folder"):
        check_writable(tmp_path / "a-file" / "deeper" / "out", "--output")
    assert check_writable(tmp_path / "new" / "deeper", "--output") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()


def test_an_existing_file_is_replaced_only_with_overwrite(tmp_path):
    existing = tmp_path / "features.safetensors"
    existing.write_bytes(b"hours of extraction")
    with pytest.raises(ValueError, match="already exists; choose another file, or pass --overwrite"):
        check_file_target(existing, "--output")
    assert check_file_target(existing, "--output", overwrite=True) == existing
    with pytest.raises(ValueError, match="is a folder; it takes a file"):
        check_file_target(tmp_path, "--output", overwrite=True)
    assert existing.read_bytes() == b"hours of extraction"


def test_a_dry_run_folder_must_be_new_or_empty_and_writable(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "README.md").write_text("x")
    with pytest.raises(ValueError, match="already holds files"):
        check_dry_run_target(tmp_path / "full")
    with pytest.raises(ValueError, match="Cannot write into the dry-run folder"):
        check_dry_run_target(read_only_folder(tmp_path) / "upload")
    assert check_dry_run_target(tmp_path / "upload") == tmp_path / "upload"


def test_a_cut_short_or_foreign_safetensors_file_is_one_sentence_naming_it(tmp_path):
    from safetensors.numpy import save_file

    whole = tmp_path / "whole.safetensors"
    save_file({"global": np.zeros((4, 8), dtype=np.float32)}, str(whole), metadata={"names": "[]"})
    header = check_safetensors_file(whole, "--image-features", "extract them again")
    assert header["global"]["shape"] == [4, 8] and header["__metadata__"] == {"names": "[]"}
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(whole.read_bytes()[:-20])
    with pytest.raises(ValueError, match=r"'.*cut.safetensors' is not a whole safetensors file \(its tensors need"):
        check_safetensors_file(cut, "--image-features", "extract them again")
    header_cut = tmp_path / "header-cut.safetensors"
    header_cut.write_bytes(whole.read_bytes()[:30])
    with pytest.raises(ValueError, match=r"header does not fit in its 30 bytes.*; extract them again\.$"):
        check_safetensors_file(header_cut, "--image-features", "extract them again")
    foreign = tmp_path / "features.npy"
    foreign.write_bytes(b"\x93NUMPY" + bytes(200))
    with pytest.raises(ValueError, match="not a whole safetensors file"):
        check_safetensors_file(foreign, "--image-features", "extract them again")
