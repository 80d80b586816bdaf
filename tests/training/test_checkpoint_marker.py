"""CheckpointMarkerCallback: the marker is a checkpoint's last file, rotation waits for it, write failures are
named."""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from transformers import TrainerControl, TrainerState

from sbert_nonling import SimCSELoss
from sbert_nonling.data import sentence_pairs_dataset
from sbert_nonling.models import build_sentence_model
from sbert_nonling.training import CheckpointMarkerCallback
from sbert_nonling.training.checkpoints import (
    COMPLETE_MARKER,
    CheckpointWriteError,
    checkpoint_damage,
    newest_intact_checkpoint,
)


def test_a_plain_trainer_with_the_callback_leaves_verifiable_checkpoints(tiny_encoder_dir, wiki_sentences, tmp_path):
    torch.manual_seed(0)
    model = build_sentence_model(tiny_encoder_dir)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=4,
        per_device_train_batch_size=8,
        save_strategy="steps",
        save_steps=2,
        report_to="none",
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=sentence_pairs_dataset(wiki_sentences[:32]),
        loss=SimCSELoss(model),
        callbacks=[CheckpointMarkerCallback(save_total_limit=1)],  # the limit here, not in the arguments
    )
    trainer.train()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["checkpoint-4"]
    folder = tmp_path / "checkpoint-4"
    manifest = json.loads((folder / COMPLETE_MARKER).read_text())
    on_disk = {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name != COMPLETE_MARKER
    }
    assert manifest["step"] == 4 and set(manifest["files"]) == on_disk and "trainer_state.json" in on_disk
    assert checkpoint_damage(folder) is None and newest_intact_checkpoint(tmp_path) == str(folder)


def checkpoint(root, step, marked):
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "weights.bin").write_bytes(bytes([step]) * 100)
    if marked:
        (folder / COMPLETE_MARKER).write_text(f"{step}\n")
    return folder


def test_rotation_runs_after_the_marker_and_only_then(tmp_path):
    for step in (2, 4):
        checkpoint(tmp_path, step, marked=True)
    newest = checkpoint(tmp_path, 6, marked=False)  # what transformers has just written
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), report_to="none")
    CheckpointMarkerCallback(save_total_limit=2).on_save(args, TrainerState(global_step=6), TrainerControl())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["checkpoint-4", "checkpoint-6"]
    assert json.loads((newest / COMPLETE_MARKER).read_text())["files"]["weights.bin"]["size"] == 100


def test_a_failed_marker_write_stops_before_rotation_naming_the_intact_checkpoints(tmp_path):
    for step in (2, 4):
        checkpoint(tmp_path, step, marked=True)
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), report_to="none")
    with pytest.raises(
        CheckpointWriteError, match=r"checkpoint-6: .*MiB are free .*\(checkpoint-4, checkpoint-2\) are intact"
    ):
        CheckpointMarkerCallback(save_total_limit=1).on_save(
            args, TrainerState(global_step=6), TrainerControl()
        )  # its folder was never written
    assert sorted(path.name for path in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4"]  # nothing rotated out
