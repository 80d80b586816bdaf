"""build_kdmcse: KDMCSE's pieces; the CLIP features it extracts travel in the plan (the runner writes them) and equal
those read back from a features file; every caption is an example; the settings reach the loss."""

from __future__ import annotations

import pytest
import torch

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.data.clip_features import load_clip_features
from sbert_nonling.data.image_features import save_image_features
from sbert_nonling.losses import SimCSELoss, TeacherGuidedAlignLoss
from sbert_nonling.methods import build_kdmcse
from tests.conftest import wiki_file


@pytest.fixture
def text_file(tmp_path):
    return wiki_file(tmp_path / "wiki.txt", 32)


def test_kdmcse_grounds_every_caption_in_clip_and_holds_images_out(tmp_path, text_file, flickr_subset, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the stage trains into checkpoints/ of the working directory
    names = sorted(path.name for path in (flickr_subset / "images").iterdir())
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(names[:3]) + "\n", encoding="utf-8")
    overrides = {"batch_size": 6, "max_steps": 2, "grounding": {"filter": True, "filter_threshold": 0.9}}
    config = load_recipe("kdmcse", tiny=True, overrides=overrides)
    data = DataSources(
        captions_file=flickr_subset / "captions.txt",
        image_dir=flickr_subset / "images",
        heldout_images_file=heldout,
        text_file=text_file,
    )
    plan = build_kdmcse(config, data)
    (stage,) = plan.stages
    captions = stage.train_dataset["captions"]
    assert list(stage.train_dataset) == ["text", "captions"] and len(captions) == 45  # 9 training images x 5
    assert captions[0]["label"].shape == (2, 32)  # the image's and the caption's tiny-CLIP embeddings
    grounding, text = stage.loss["captions"], stage.loss["text"]
    assert isinstance(grounding, TeacherGuidedAlignLoss) and isinstance(text, SimCSELoss)
    assert grounding.text_loss is text and text.margin == 0.15
    assert (grounding.margin, grounding.filter_threshold, grounding.filter_scores) == (0.15, 0.9, "cosine")
    assert stage.args.multi_dataset_batch_sampler.__name__ == "InterleavedBatchSampler"

    # the extracted features, saved as the runner saves them, read back give the same caption dataset
    features_file = tmp_path / "clip.safetensors"
    save_image_features(features_file, *plan.extracted_features, captions=plan.extracted_captions)
    saved_names, saved_captions, features = load_clip_features(features_file)
    assert saved_names == names and len(saved_captions) == 60 and features["captions"].shape == (60, 32)
    again = build_kdmcse(config, DataSources(**{**vars(data), "image_features": features_file}))
    assert again.extracted_features is None and again.extracted_captions is None
    reread = again.stages[0].train_dataset["captions"]
    assert reread["anchor"] == captions["anchor"]
    assert torch.equal(reread[:]["label"], captions[:]["label"])

    stage.trainer(plan.model, plan.evaluator).train()
    retrieval = plan.evaluations["retrieval"](plan.model)
    assert retrieval["text_to_image_R@5"] == 100.0  # 3 held-out images: every caption's image is in the top 5


def test_captions_only_trains_the_grounding_with_its_text_term(text_file, flickr_subset):
    config = load_recipe("kdmcse", tiny=True, overrides={"data": "captions", "max_steps": 1})
    plan = build_kdmcse(
        config, DataSources(captions_file=flickr_subset / "captions.txt", image_dir=flickr_subset / "images")
    )
    (stage,) = plan.stages
    assert isinstance(stage.loss, TeacherGuidedAlignLoss) and isinstance(stage.loss.text_loss, SimCSELoss)
    assert len(stage.train_dataset) == 60
