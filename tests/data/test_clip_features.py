"""CLIP teacher features: extracted for images and captions, saved with their names and captions, loaded back, and
the ``features --encoder CLIP --captions`` command."""

from __future__ import annotations

import json

import pytest
import torch

from sbert_nonling.data.captions import read_captions
from sbert_nonling.data.clip_features import extract_clip_features, load_clip_features
from sbert_nonling.data.frozen_clip import FrozenCLIP
from sbert_nonling.data.image_features import save_image_features


def test_clip_features_round_trip_through_the_cli(tmp_path, tiny_clip_dir, flickr_subset, capsys):
    from sbert_nonling.cli import main

    command = ["features", "--image-dir", str(flickr_subset / "images"), "--encoder", tiny_clip_dir]
    output = tmp_path / "clip.safetensors"
    assert main([*command, "--captions", str(flickr_subset / "captions.txt"), "--output", str(output)]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["images"], result["captions"]) == (12, 60)
    names, captions, features = load_clip_features(output)
    pairs = read_captions(flickr_subset / "captions.txt")
    assert names == sorted({image for image, _ in pairs}) and captions == [caption for _, caption in pairs]
    direct = extract_clip_features(
        [flickr_subset / "images" / name for name in names], captions, FrozenCLIP.from_pretrained(tiny_clip_dir)
    )
    torch.testing.assert_close(features["global"], direct["global"])
    torch.testing.assert_close(features["captions"], direct["captions"])
    written = output.read_bytes()
    assert main([*command, "--captions", str(flickr_subset / "captions.txt"), "--output", str(output)]) == 2
    assert "already exists; choose another file, or pass --overwrite" in capsys.readouterr().err
    assert output.read_bytes() == written  # an extraction is never replaced by accident
    argv = [*command, "--captions", str(flickr_subset / "captions.txt"), "--output", str(output), "--overwrite"]
    assert main(argv) == 0


def test_planning_only_encodes_the_first_batch_and_checks_every_image(tmp_path, tiny_clip_dir, flickr_subset):
    from sbert_nonling.data.image_features import planning_only

    clip = FrozenCLIP.from_pretrained(tiny_clip_dir)
    images = sorted((flickr_subset / "images").iterdir())[:5]
    captions = ["A dog runs.", "Two men talk.", "A red car.", "A child sings."]
    direct = extract_clip_features(images, captions, clip, batch_size=2)
    with planning_only():
        planned = extract_clip_features(images, captions, clip, batch_size=2)
    for key in ("global", "captions"):
        assert planned[key].shape == direct[key].shape
        torch.testing.assert_close(planned[key][:2], direct[key][:2])
        assert not planned[key][2:].any()
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    with planning_only(), pytest.raises(ValueError, match="broken.jpg"):
        extract_clip_features([*images, tmp_path / "broken.jpg"], captions, clip, batch_size=2)


def test_the_command_asks_for_what_each_encoder_needs(tmp_path, tiny_clip_dir, flickr_subset, capsys):
    from sbert_nonling.cli import main

    images = ["features", "--image-dir", str(flickr_subset / "images"), "--output", str(tmp_path / "f.safetensors")]
    assert main([*images, "--encoder", tiny_clip_dir]) == 2
    assert (
        "is not a CNN (resnet50, efficientnet-lite0), so it is read as a CLIP: pass --captions"
        in capsys.readouterr().err
    )
    captions = ["--captions", str(flickr_subset / "captions.txt")]
    assert main([*images, "--encoder", "efficientnet-lite0", *captions]) == 2
    assert "--captions is for a CLIP --encoder" in capsys.readouterr().err
    assert main([*images, "--encoder", "clip-vit-large-patch14", *captions]) == 2
    error = capsys.readouterr().err
    assert "CLIP 'clip-vit-large-patch14' (--encoder) could not be loaded" in error and len(error.splitlines()) == 1
    assert main([*images, "--encoder", "clip-vit-large-patch41", *captions]) == 2
    (error,) = capsys.readouterr().err.splitlines()
    assert "Unknown CLIP 'clip-vit-large-patch41': did you mean 'clip-vit-large-patch14'?" in error


def test_a_cut_short_features_file_is_one_sentence_naming_it(tmp_path):
    features = {"global": torch.zeros(3, 4), "captions": torch.zeros(2, 4)}
    save_image_features(tmp_path / "clip.safetensors", ["a.jpg", "b.jpg", "c.jpg"], features, captions=["x", "y"])
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes((tmp_path / "clip.safetensors").read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"The features file '.*cut.safetensors' is not a whole safetensors file"):
        load_clip_features(cut)


def test_a_file_without_caption_embeddings_is_named(tmp_path):
    save_image_features(tmp_path / "cnn.safetensors", ["a.jpg"], {"global": torch.zeros(1, 4)})
    with pytest.raises(ValueError, match="holds no CLIP caption embeddings"):
        load_clip_features(tmp_path / "cnn.safetensors")
    with pytest.raises(ValueError, match="2 captions but 1 caption embeddings"):
        features = {"global": torch.zeros(1, 4), "captions": torch.zeros(1, 4)}
        save_image_features(tmp_path / "clip.safetensors", ["a.jpg"], features, captions=["one", "two"])
