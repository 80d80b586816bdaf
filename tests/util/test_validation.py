"""Input checks: lone surrogates replaced, lines split at \\n only, one ValueError naming each bad sentence or
input."""

from __future__ import annotations

import pytest

from sbert_nonling.util.validation import check_sentence, check_text_inputs, replace_lone_surrogates, split_lines


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
