"""Captions: Flickr token / CSV / JSONL readers with their errors; caption + image-feature datasets."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator

from sbert_nonling.data.captions import caption_clip_dataset, caption_feature_dataset, read_captions


def test_flickr_token_file_keeps_captions_of_present_images(data_dir, caplog):
    pairs = read_captions(
        data_dir / "corpus" / "flickr8k" / "Flickr8k.token.txt", image_dir=data_dir / "images" / "flickr8k"
    )
    assert len(pairs) == 441 * 5
    assert pairs[0] == (
        "1000268201_693b08cb0e.jpg",
        "A child in a pink dress is climbing up a set of stairs in an entry way .",
    )
    assert "skipped 38255 of 40460 captions" in caplog.text


def test_csv_and_jsonl_captions_and_their_errors(tmp_path):
    (tmp_path / "c.csv").write_text("image,caption\na.jpg,A dog.\nb.jpg,A cat.\n", encoding="utf-8")
    (tmp_path / "c.jsonl").write_text('{"image": "a.jpg", "caption": "A dog."}\n', encoding="utf-8")
    assert read_captions(tmp_path / "c.csv") == [("a.jpg", "A dog."), ("b.jpg", "A cat.")]
    assert read_captions(tmp_path / "c.jsonl") == [("a.jpg", "A dog.")]
    (tmp_path / "bad.jsonl").write_text('{"image": "a.jpg"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: expected a JSON object with 'image' and 'caption'"):
        read_captions(tmp_path / "bad.jsonl")
    (tmp_path / "bad.txt").write_text("a.jpg#0 no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:1: expected '<image>#<n><TAB><caption>'"):
        read_captions(tmp_path / "bad.txt")
    with pytest.raises(ValueError, match="no \\(image, caption\\) pairs with an image in"):
        read_captions(tmp_path / "c.csv", image_dir=tmp_path)
    for empty in ("empty.txt", "empty.csv", "empty.jsonl"):
        (tmp_path / empty).write_text("\n" if empty.endswith(".txt") else "", encoding="utf-8")
        with pytest.raises(ValueError, match=f"Captions file '.*{empty}' holds no captions \\(it is empty\\)"):
            read_captions(tmp_path / empty, image_dir=tmp_path)


def test_caption_dataset_samples_one_caption_per_image_and_checks_features():
    pairs = [("a.jpg", "one"), ("a.jpg", "two"), ("b.jpg", "three")]
    features = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    dataset = caption_feature_dataset(pairs, ["a.jpg", "b.jpg"], features)
    rows = dataset[:]
    assert len(dataset) == 2 and rows["anchor"] == rows["positive"] and rows["anchor"][1] == "three"
    assert torch.equal(rows["label"][1], torch.tensor([3.0, 4.0, 5.0]))
    assert len(caption_feature_dataset(pairs, ["a.jpg", "b.jpg"], features, one_caption_per_image=False)) == 3
    with pytest.raises(ValueError, match=r"No features for 1 image\(s\), e.g. \['b.jpg'\]"):
        caption_feature_dataset(pairs, ["a.jpg"], features[:1])
    with pytest.raises(ValueError, match="2 image names but 1 feature rows"):
        caption_feature_dataset(pairs, ["a.jpg", "b.jpg"], features[:1])


def test_region_features_collate_to_the_stored_tensor():
    pairs = [("a.jpg", "one"), ("b.jpg", "two"), ("c.jpg", "three")]
    regions = torch.randn(3, 49, 1280)
    dataset = caption_feature_dataset(pairs, ["c.jpg", "a.jpg", "b.jpg"], regions, one_caption_per_image=False)
    batch = SentenceTransformerDataCollator(preprocess_fn=lambda texts, **kwargs: {})(dataset.__getitems__([0, 1, 2]))
    assert batch["label"].dtype == torch.float32 and torch.equal(batch["label"], regions[[1, 2, 0]])
    assert (
        list(dataset[2]) == ["anchor", "positive", "label"]
        and dataset[2]["anchor"] == dataset[2]["positive"] == "three"
    )
    with pytest.raises(ValueError, match=r"must be \(images, d\) or \(images, regions, d\), got shape \(3,\)"):
        caption_feature_dataset(pairs, ["a.jpg", "b.jpg", "c.jpg"], torch.ones(3))


def test_a_clip_dataset_keeps_every_caption_with_its_image_s_and_its_own_embedding():
    pairs = [("a.jpg", "a dog"), ("b.jpg", "a cat"), ("a.jpg", "a brown dog")]
    features = {
        "global": torch.tensor([[1.0, 0.0], [0.0, 1.0]]),
        "captions": torch.tensor([[5.0, 5.0], [6.0, 6.0], [7.0, 7.0]]),
    }
    dataset = caption_clip_dataset(pairs, ["a.jpg", "b.jpg"], ["a cat", "a dog", "a brown dog"], features)
    assert dataset["anchor"] == dataset["positive"] == ["a dog", "a cat", "a brown dog"]
    assert dataset[0]["label"].tolist() == [[1.0, 0.0], [6.0, 6.0]]  # its image, then itself
    assert dataset[1]["label"].tolist() == [[0.0, 1.0], [5.0, 5.0]]
    assert dataset[2]["label"].tolist() == [[1.0, 0.0], [7.0, 7.0]]


def test_clip_features_that_do_not_match_the_captions_are_named():
    features = {"global": torch.zeros(1, 2), "captions": torch.zeros(1, 2)}
    with pytest.raises(ValueError, match=r"1 image\(s\) and 1 caption\(s\) have no embedding.*'b.jpg'"):
        caption_clip_dataset([("a.jpg", "a dog"), ("b.jpg", "a cat")], ["a.jpg"], ["a dog"], features)
