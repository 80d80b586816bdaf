"""methods/clip_teacher.py, the plan and CLIP teacher KDMCSE and DALR share: features read or computed, checked against
the config and the captions; held-out images only for a caption loss with a shared space."""

from __future__ import annotations

import pytest
import torch

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.data.image_features import save_image_features
from sbert_nonling.methods import build_dalr, build_kdmcse
from tests.conftest import wiki_file


@pytest.fixture
def text_file(tmp_path):
    return wiki_file(tmp_path / "wiki.txt", 32)


def test_clip_features_of_another_width_or_no_captions_are_refused(tmp_path, text_file, flickr_subset):
    config = load_recipe("kdmcse", tiny=True, overrides={"max_steps": 1})
    wide = tmp_path / "wide.safetensors"
    names = sorted(path.name for path in (flickr_subset / "images").iterdir())
    captions = [line.partition("\t")[2].strip() for line in (flickr_subset / "captions.txt").read_text().splitlines()]
    features = {"global": torch.zeros(12, 64), "captions": torch.zeros(60, 64)}
    save_image_features(wide, names, features, captions=captions)
    data = DataSources(
        captions_file=flickr_subset / "captions.txt",
        image_dir=flickr_subset / "images",
        text_file=text_file,
        image_features=wide,
    )
    with pytest.raises(ValueError, match="CLIP features have dimension 64, .* expects clip_dimension=32"):
        build_kdmcse(config, data)
    with pytest.raises(ValueError, match="holds no CLIP caption embeddings"):
        build_kdmcse(config, DataSources(**{**vars(data), "image_features": flickr_subset / "features.safetensors"}))
    with pytest.raises(ValueError, match="pass captions_file"):
        build_kdmcse(config, DataSources(text_file=text_file))


def test_held_out_images_need_a_caption_loss_with_a_shared_space(tmp_path, text_file, flickr_subset):
    heldout = tmp_path / "heldout.txt"
    heldout.write_text(sorted(path.name for path in (flickr_subset / "images").iterdir())[0] + "\n", encoding="utf-8")
    config = load_recipe("dalr", tiny=True, overrides={"max_steps": 1})
    data = DataSources(
        captions_file=flickr_subset / "captions.txt",
        image_dir=flickr_subset / "images",
        text_file=text_file,
        heldout_images_file=heldout,
    )
    with pytest.raises(ValueError, match="no shared caption-image space to score held-out images in"):
        build_dalr(config, data)  # DALR's loss scores no caption-image space


@pytest.mark.parametrize("compile_setting", [True, False])
def test_a_compiled_kdmcse_stage_leaves_out_an_epoch_s_short_last_batch(flickr_subset, compile_setting):
    config = load_recipe(
        "kdmcse", tiny=True, overrides={"data": "captions", "max_steps": 1, "compile": compile_setting}
    )
    data = DataSources(captions_file=flickr_subset / "captions.txt", image_dir=flickr_subset / "images")
    (stage,) = build_kdmcse(config, data).stages
    # static shapes for a compiled step; KDMCSE itself needs no full batch, so an eager run keeps it
    assert stage.args.dataloader_drop_last is compile_setting
