"""build_dalr: DALR's pieces; the frozen text teachers (tiny ones read the student's tokens), their weights, and a
teacher that cannot be loaded named before training."""

from __future__ import annotations

import pytest
import torch

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.losses import DALRLoss, SimCSELoss
from sbert_nonling.methods import build_dalr
from tests.conftest import wiki_file


@pytest.fixture
def data(tmp_path, flickr_subset):
    captions = {"captions_file": flickr_subset / "captions.txt", "image_dir": flickr_subset / "images"}
    return DataSources(**captions, text_file=wiki_file(tmp_path / "wiki.txt", 32))


def test_dalr_distils_every_caption_from_frozen_teachers_and_clip(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the stage trains into checkpoints/ of the working directory
    overrides = {
        "batch_size": 6,
        "max_steps": 2,
        "ranking.kind": "listnet",
        "alignment.consistency_mismatch": "released_roll",
    }
    config = load_recipe("dalr", tiny=True, overrides=overrides)
    plan = build_dalr(config, data)
    (stage,) = plan.stages
    assert list(stage.train_dataset) == ["text", "captions"] and len(stage.train_dataset["captions"]) == 60
    loss, text = stage.loss["captions"], stage.loss["text"]
    assert isinstance(loss, DALRLoss) and isinstance(text, SimCSELoss) and loss.text_loss is text
    assert (loss.ranking_loss.kind, loss.consistency.mismatch, loss.ranking_loss.teacher_weights) == (
        "listnet",
        "released_roll",
        [0.33, 0.67],
    )
    teachers = loss.ranking_loss.teachers
    assert len(teachers) == 2 and all(not parameter.requires_grad for parameter in teachers.parameters())
    assert all(shared for shared in loss.ranking_loss.shares_tokens)  # tiny teachers read the student's tokens
    assert not any(key.startswith("ranking_loss.teachers.") for key in loss.state_dict())
    before = [parameter.clone() for parameter in teachers.parameters()]
    stage.trainer(plan.model, plan.evaluator).train()
    assert all(torch.equal(old, new) for old, new in zip(before, teachers.parameters()))  # frozen through training
    assert "retrieval" not in plan.evaluations  # no shared caption-image space


def test_teachers_and_their_weights_must_match():
    with pytest.raises(ValueError, match=r"'teacher_weights' \[1.0\] must give one weight per teacher"):
        load_recipe("dalr", tiny=True, overrides={"teacher_weights": [1.0]})  # before anything is built


def test_a_teacher_that_cannot_be_loaded_is_named_in_one_sentence(data, tiny_clip_dir, tiny_encoder_dir):
    overrides = {
        "clip_encoder": tiny_clip_dir,
        "clip_dimension": 16,
        "model": tiny_encoder_dir,
        "teachers": ["princeton-nlp/unsup-simcse-bert-base-uncased", tiny_encoder_dir],
    }
    with pytest.raises(
        ValueError, match="Teacher 'princeton-nlp/unsup-simcse-bert-base-uncased' .* could not be"
    ) as error:
        build_dalr(load_recipe("dalr", overrides=overrides), data)
    assert "Offline: copy the teachers' folders here" in str(error.value)


def test_an_epoch_s_last_caption_batch_of_one_is_left_out(tmp_path, flickr_subset):
    names = sorted(path.name for path in (flickr_subset / "images").iterdir())[:2]
    lines = (flickr_subset / "captions.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "captions.txt").write_text("\n".join(lines[:9]) + "\n", encoding="utf-8")  # 9 captions, 2 photos
    assert {line.split("#")[0] for line in lines[:9]} == set(names)
    overrides = {"data": "captions", "batch_size": 4, "max_steps": 4}  # 2 epochs of [4, 4] without the [1]
    plan = build_dalr(
        load_recipe("dalr", tiny=True, overrides=overrides),
        DataSources(captions_file=tmp_path / "captions.txt", image_dir=flickr_subset / "images"),
    )
    (stage,) = plan.stages
    assert stage.args.dataloader_drop_last
    trainer = stage.trainer(plan.model, output_dir=tmp_path)
    trainer.train()  # a batch of 1 would stop the run: DALR needs two captions
    assert trainer.state.global_step == 4
