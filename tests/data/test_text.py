"""Text data from local files: sentence corpora (SimCSE's wiki1m format) and NLI triplet CSVs, and their datasets."""

from __future__ import annotations

import pytest

from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset


def test_the_wiki_sample_reads_one_sentence_per_line(data_dir):
    path = data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt"
    sentences = read_sentences(path)
    assert len(sentences) == 11913 and sentences[0] == path.read_text(encoding="utf-8").split("\n")[0].strip()
    assert read_sentences(path, limit=5) == sentences[:5]


def test_blank_lines_are_skipped_and_only_newlines_split(tmp_path, caplog):
    path = tmp_path / "corpus.txt"
    path.write_text("  first sentence \n\n \t \nsecond\x0cstill second\u2028too\r\nthird\n", encoding="utf-8")
    with caplog.at_level("INFO"):
        assert read_sentences(path) == ["first sentence", "second\x0cstill second\u2028too", "third"]
    assert "skipped 2 blank line(s)" in caplog.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"holds no sentences"),
        (b"\n \n", r"holds no sentences"),
        (b"caf\xe9\n", r"corpus.txt: not valid UTF-8 \(byte 3\)"),
    ],
)
def test_unreadable_corpora_are_value_errors_naming_the_file(tmp_path, content, message):
    (tmp_path / "corpus.txt").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_sentences(tmp_path / "corpus.txt")
    with pytest.raises(ValueError, match=r"Data file '.*missing.txt' does not exist"):
        read_sentences(tmp_path / "missing.txt")


def test_the_snli_sample_reads_as_triplets_and_becomes_anchor_positive_negative(data_dir):
    triplets = read_nli_triplets(data_dir / "corpus" / "snli_devtest_triplets.csv")
    assert len(triplets) == 5864 and all(len(triplet) == 3 and all(triplet) for triplet in triplets)
    dataset = nli_triplets_dataset(triplets[:3])
    assert dataset.column_names == ["anchor", "positive", "negative"]
    assert [tuple(row.values()) for row in dataset] == triplets[:3]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "premise,hypothesis,label\na,b,c\n",
            r"nli.csv: expected the header sent0,sent1,hard_neg, found \['premise', 'hypothesis', 'label'\]",
        ),
        ("", r"nli.csv: expected the header sent0,sent1,hard_neg, found 'an empty file'"),
        ("sent0,sent1,hard_neg\n", r"nli.csv holds no triplets"),
        ("sent0,sent1,hard_neg\na,b,c\nd,e\n", r"nli.csv:3: expected 3 columns \(sent0,sent1,hard_neg\), found 2"),
        ('sent0,sent1,hard_neg\na,b,c\nd," ",f\n', r"nli.csv:3 sent1 is empty or whitespace-only"),
        (
            "sent0,sent1,hard_neg\na,b,c\nsent0,sent1,hard_neg\nd,e,f\n",
            r"nli.csv:3: the header sent0,sent1,hard_neg again",
        ),
    ],
)
def test_malformed_nli_files_name_the_file_and_line(tmp_path, content, message):
    (tmp_path / "nli.csv").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_nli_triplets(tmp_path / "nli.csv")


def test_sentence_pairs_put_each_sentence_twice():
    dataset = sentence_pairs_dataset(["a", "b"])
    assert dataset.column_names == ["anchor", "positive"] and dataset["anchor"] == dataset["positive"] == ["a", "b"]
