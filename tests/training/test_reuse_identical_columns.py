"""ReuseIdenticalColumns: a column holding the previous column's inputs reuses its features."""

from __future__ import annotations

import torch

from sbert_nonling.training import ReuseIdenticalColumns


def test_an_audio_clip_in_both_view_columns_is_preprocessed_once(data_dir):
    from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex

    dataset, _ = audio_folder_dataset(data_dir / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=3)
    rows = dataset[:3]
    calls = []
    preprocess = ReuseIdenticalColumns(
        lambda inputs, **kwargs: calls.append(len(inputs)) or {"n": torch.tensor(len(inputs))}
    )
    first, second = preprocess(rows["view_1"], task=None), preprocess(rows["view_2"], task=None)
    assert calls == [3] and first == second and first is not second
    preprocess(rows["view_2"], task="other")  # another task: preprocessed again
    preprocess(dataset[:3]["view_1"], task="other")  # decoded again: new objects, preprocessed again
    assert calls == [3, 3, 3]


def test_equal_sentences_reuse_the_features_and_different_ones_are_tokenised(tiny_model, wiki_sentences):
    calls = []
    preprocess = ReuseIdenticalColumns(
        lambda inputs, **kwargs: calls.append(list(inputs)) or tiny_model.preprocess(inputs, **kwargs)
    )
    anchors = wiki_sentences[:4]
    first, second = preprocess(anchors), preprocess(list(anchors))  # equal strings, other list objects
    assert len(calls) == 1 and torch.equal(first["input_ids"], second["input_ids"])
    assert torch.equal(second["input_ids"], tiny_model.preprocess(anchors)["input_ids"])
    preprocess(wiki_sentences[4:8])
    preprocess(wiki_sentences[4:7])  # a prefix of the previous column is not the same column
    assert len(calls) == 3
