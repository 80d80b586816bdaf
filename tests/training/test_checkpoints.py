"""Checkpoint markers list what a checkpoint holds; resume skips damaged checkpoints; rotation waits for the marker."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from transformers import TrainerCallback

from sbert_nonling import SimCSELoss
from sbert_nonling.data import sentence_pairs_dataset
from sbert_nonling.models import build_sentence_model
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.checkpoints import (
    COMPLETE_MARKER,
    CheckpointWriteError,
    checkpoint_damage,
    newest_intact_checkpoint,
    write_complete_marker,
    write_failure,
)
from tests.training.conftest import small_run_arguments


def make_trainer(model_dir, sentences, output_dir, max_steps):
    torch.manual_seed(0)
    model = build_sentence_model(model_dir)
    args = small_run_arguments(output_dir, max_steps, save_total_limit=2)
    return NonLinguisticTrainer(
        model=model, args=args, train_dataset=sentence_pairs_dataset(sentences), loss=SimCSELoss(model)
    )


class StartStep(TrainerCallback):
    """Records the step training (re)starts from."""

    def on_train_begin(self, args, state, control, **kwargs):
        self.step = state.global_step


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_encoder_dir, wiki_sentences):
    """A 6-step run saving every 2 steps, keeping 2 checkpoints."""
    output = tmp_path_factory.mktemp("checkpoints")
    make_trainer(tiny_encoder_dir, wiki_sentences[:64], output, max_steps=6).train()
    return output


def test_the_marker_lists_every_file_with_its_size_and_checksum(trained):
    assert sorted(path.name for path in trained.iterdir()) == [
        "checkpoint-4",
        "checkpoint-6",
    ]  # rotated after the marker
    folder = trained / "checkpoint-6"
    manifest = json.loads((folder / COMPLETE_MARKER).read_text())
    assert manifest["step"] == 6
    on_disk = {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name != COMPLETE_MARKER
    }
    assert (
        set(manifest["files"]) == on_disk
        and {"text_0_SharedEncoder/model.safetensors", "optimizer.pt", "loss_state.safetensors", "trainer_state.json"}
        <= on_disk
    )
    weights = folder / "text_0_SharedEncoder" / "model.safetensors"
    assert manifest["files"]["text_0_SharedEncoder/model.safetensors"]["size"] == weights.stat().st_size
    assert all(len(entry["sha256"]) == 64 for entry in manifest["files"].values())
    assert checkpoint_damage(folder) is None


def copy_run(source, target):
    import shutil

    shutil.copytree(source, target)
    return target


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
def test_resume_skips_a_damaged_checkpoint_naming_the_file(
    trained, tmp_path, tiny_encoder_dir, wiki_sentences, damage, caplog
):
    run = copy_run(trained, tmp_path / "run")
    weights = run / "checkpoint-6" / "text_0_SharedEncoder" / "model.safetensors"
    if damage == "truncate":  # a disk or copy fault after the marker was written
        weights.write_bytes(weights.read_bytes()[:1000])
    elif damage == "flip":
        data = bytearray(weights.read_bytes())
        data[-10] ^= 0xFF
        weights.write_bytes(bytes(data))
    else:
        weights.unlink()
    with caplog.at_level(logging.WARNING):
        assert newest_intact_checkpoint(run) == str(run / "checkpoint-4")
    assert "checkpoint-6 is damaged" in caplog.text and str(weights) in caplog.text

    trainer = make_trainer(tiny_encoder_dir, wiki_sentences[:64], run, max_steps=6)
    start = StartStep()
    trainer.add_callback(start)
    trainer.train(resume_from_checkpoint=True)
    assert start.step == 4 and trainer.state.global_step == 6
    assert checkpoint_damage(run / "checkpoint-6") is None  # written again, with a new marker


def test_no_intact_checkpoint_is_a_value_error_naming_every_damaged_file(
    trained, tmp_path, tiny_encoder_dir, wiki_sentences
):
    run = copy_run(trained, tmp_path / "run")
    for step in (4, 6):
        (run / f"checkpoint-{step}" / "optimizer.pt").write_bytes(b"")
    trainer = make_trainer(tiny_encoder_dir, wiki_sentences[:64], run, max_steps=6)
    with pytest.raises(
        ValueError,
        match=r"No intact checkpoint .*checkpoint-6/optimizer\.pt has 0 bytes.*checkpoint-4/optimizer\.pt has 0 bytes",
    ):
        trainer.train(resume_from_checkpoint=True)


def test_a_marker_that_is_not_a_manifest_is_damage(trained, tmp_path, caplog):
    run = copy_run(trained, tmp_path / "run")
    (run / "checkpoint-6" / COMPLETE_MARKER).write_text("6\n")  # a step number, no file list to check
    assert (
        checkpoint_damage(run / "checkpoint-6")
        == f"{run / 'checkpoint-6' / COMPLETE_MARKER} is not a checkpoint manifest"
    )
    with caplog.at_level(logging.WARNING):
        assert newest_intact_checkpoint(run) == str(run / "checkpoint-4")


def test_a_write_failure_names_the_folder_the_free_space_and_the_intact_checkpoints(trained):
    error = write_failure(trained / "checkpoint-8", OSError(28, "No space left on device"))
    assert isinstance(error, CheckpointWriteError) and isinstance(error, OSError)
    message = str(error)
    assert str(trained / "checkpoint-8") in message and "No space left on device" in message
    assert "MiB are free" in message and "(checkpoint-6, checkpoint-4) are intact" in message and "--resume" in message


def test_an_explicit_resume_path_is_verified_like_resume_true(trained, tmp_path, tiny_encoder_dir, wiki_sentences):
    import shutil

    trainer = make_trainer(tiny_encoder_dir, wiki_sentences[:64], tmp_path / "out", max_steps=8)
    unmarked = shutil.copytree(trained / "checkpoint-6", tmp_path / "unmarked")
    (unmarked / COMPLETE_MARKER).unlink()
    with pytest.raises(ValueError, match=r"resume_from_checkpoint='.*unmarked' has no checkpoint_complete marker"):
        trainer.train(resume_from_checkpoint=str(unmarked))
    model_only = shutil.copytree(trained / "checkpoint-6", tmp_path / "model-only")
    (model_only / "optimizer.pt").unlink()
    write_complete_marker(model_only, 6)  # complete and intact, but no optimizer state
    with pytest.raises(ValueError, match=r"holds no optimizer.pt: training would go on with a fresh optimizer"):
        trainer.train(resume_from_checkpoint=str(model_only))
    damaged = shutil.copytree(trained / "checkpoint-6", tmp_path / "damaged")
    with (damaged / "optimizer.pt").open("r+b") as file:
        file.write(b"\0")
    with pytest.raises(ValueError, match=r"'.*damaged' is damaged: .*optimizer.pt does not have the SHA-256"):
        trainer.train(resume_from_checkpoint=str(damaged))
    assert trainer.state.global_step == 0 and not list(
        (tmp_path / "out").glob("checkpoint-*")
    )  # nothing trained or written
