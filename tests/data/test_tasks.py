from __future__ import annotations

import pytest

from sbert_nonling.data.tasks import (
    SICK_LABELS,
    pair_classification_dataset,
    read_sick_entailment,
    read_stsb_genres,
    sentence_classification_dataset,
    sts_regression_dataset,
)


def test_sick_entailment_labels_with_and_without_header(tmp_path, data_dir):
    pairs = read_sick_entailment(data_dir / "sts" / "SICK" / "SICK_train.txt")
    assert len(pairs) == 4500 and {label for _, _, label in pairs} == set(SICK_LABELS)
    path = tmp_path / "SICK.txt"
    path.write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA dog runs\tA dog moves\t4.5\tENTAILMENT\n",
        encoding="utf-8",
    )
    assert read_sick_entailment(path) == [("A dog runs", "A dog moves", "ENTAILMENT")]
    path.write_text("1\tA dog runs\tA dog moves\t4.5\tMAYBE\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"SICK.txt:1: entailment_judgment 'MAYBE' is not one of"):
        read_sick_entailment(path)
    path.write_text("1\tA dog runs\tA dog moves\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected at least 5 TAB-separated columns, found 3"):
        read_sick_entailment(path)
    with pytest.raises(ValueError, match="does not exist"):
        read_sick_entailment(tmp_path / "missing.txt")


def test_stsb_genres_are_distinct_sentences_with_their_row_genre(data_dir):
    genres = read_stsb_genres(data_dir / "sts" / "STSBenchmark" / "sts-train.csv")
    sentences = [sentence for sentence, _ in genres]
    assert len(sentences) == len(set(sentences)) > 5749
    assert {genre for _, genre in genres} == {"main-captions", "main-forum", "main-news"}
    assert genres[0] == ("A plane is taking off.", "main-captions")


def test_datasets_carry_label_ids_and_normalised_scores():
    dataset, names = sentence_classification_dataset([("a", "news"), ("b", "captions"), ("c", "news")])
    assert (
        names == ("captions", "news")
        and dataset["label"] == [1, 0, 1]
        and dataset.column_names == ["sentence", "label"]
    )
    pairs, names = pair_classification_dataset([("a", "b", "NEUTRAL"), ("c", "d", "CONTRADICTION")])
    assert names == SICK_LABELS and pairs["label"] == [1, 2]
    with pytest.raises(ValueError, match=r"label\(s\) \['maybe'\] are not in label_names"):
        pair_classification_dataset([("a", "b", "maybe")])
    scores = sts_regression_dataset(["a", "b"], ["c", "d"], [1.0, 5.0], score_range=(1.0, 5.0))
    assert scores["score"] == [0.0, 1.0] and scores.column_names == ["sentence1", "sentence2", "score"]
    with pytest.raises(ValueError, match=r"1 score\(s\) outside score_range=\(0.0, 5.0\), e.g. 6.0"):
        sts_regression_dataset(["a"], ["b"], [6.0], score_range=(0.0, 5.0))
    with pytest.raises(ValueError, match="must be \\(low, high\\) with high > low"):
        sts_regression_dataset(["a"], ["b"], [1.0], score_range=(5.0, 0.0))
