"""LossStateCallback on a plain SentenceTransformerTrainer: loss heads in every checkpoint, restored exactly on
resume."""

from __future__ import annotations

import logging

import pytest
import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from transformers import TrainerCallback, TrainerControl, TrainerState

from sbert_nonling import MultimodalAlignLoss, SimCSELoss
from sbert_nonling.data import sentence_pairs_dataset
from sbert_nonling.models import build_sentence_model
from sbert_nonling.training import CheckpointMarkerCallback, LossStateCallback
from sbert_nonling.training.checkpoints import COMPLETE_MARKER, CheckpointWriteError
from sbert_nonling.training.loss_state import LOSS_STATE_FILE, load_loss_state_dict, loss_state_dict
from tests.training.conftest import small_run_arguments


class StopAt(TrainerCallback):
    """Stops training after step ``step`` (after its checkpoint): an interruption at a known point."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            control.should_training_stop = True


def plain_run(encoder_dir, sentences, output_dir, *callbacks, resume=False):
    """A 4-step SimCSE run (training MLP head, dropout) with a plain SentenceTransformerTrainer; returns (model,
    loss)."""
    torch.manual_seed(0)
    model = build_sentence_model(encoder_dir)
    loss = SimCSELoss(model, training_head="mlp")
    args = small_run_arguments(output_dir, 4)
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=sentence_pairs_dataset(sentences), loss=loss
    )
    for callback in callbacks:
        trainer.add_callback(callback(loss) if callback is LossStateCallback else callback)
    trainer.train(resume_from_checkpoint=resume or None)
    return model, loss


def test_a_plain_trainer_with_the_callback_checkpoints_and_restores_a_loss_head_exactly(
    tiny_encoder_dir, wiki_sentences, tmp_path
):
    sentences = wiki_sentences[:64]
    straight_model, straight_loss = plain_run(
        tiny_encoder_dir, sentences, tmp_path / "straight", LossStateCallback, CheckpointMarkerCallback()
    )
    saved = load_file(str(tmp_path / "straight" / "checkpoint-4" / LOSS_STATE_FILE))
    assert set(saved) == {"loss.head.0.weight", "loss.head.0.bias"}  # the head only, never the model
    assert torch.equal(saved["loss.head.0.weight"], straight_loss.head[0].weight.detach())
    assert (
        LOSS_STATE_FILE in (tmp_path / "straight" / "checkpoint-4" / COMPLETE_MARKER).read_text()
    )  # written before the marker

    plain_run(tiny_encoder_dir, sentences, tmp_path / "resumed", LossStateCallback, StopAt(2))
    resumed_model, resumed_loss = plain_run(
        tiny_encoder_dir, sentences, tmp_path / "resumed", LossStateCallback, resume=True
    )
    assert torch.equal(resumed_loss.head[0].weight, straight_loss.head[0].weight)
    assert all(
        torch.equal(value, resumed_model.state_dict()[key]) for key, value in straight_model.state_dict().items()
    )

    # Negative control: the same interruption without the callback resumes with a fresh head and ends elsewhere.
    plain_run(tiny_encoder_dir, sentences, tmp_path / "without", StopAt(2))
    _, without_loss = plain_run(tiny_encoder_dir, sentences, tmp_path / "without", resume=True)
    assert not (tmp_path / "without" / "checkpoint-2" / LOSS_STATE_FILE).exists()
    assert not torch.equal(without_loss.head[0].weight, straight_loss.head[0].weight)


def test_shared_heads_are_stored_once_and_unknown_entries_rejected(tiny_model):
    simcse = SimCSELoss(tiny_model)
    mcse = MultimodalAlignLoss(tiny_model, image_dimension=8, text_loss=simcse)
    state = loss_state_dict({"text": simcse, "captions": mcse}, tiny_model)
    assert "text.head.0.weight" in state and "captions.text_loss.head.0.weight" not in state
    assert "captions.text_head.0.weight" in state and not any(".model." in key for key in state)
    with pytest.raises(ValueError, match="entries the current losses lack"):
        load_loss_state_dict({"text": simcse}, state)


def test_a_checkpoint_elsewhere_is_read_from_resume_from_checkpoint_and_a_missing_file_warns(
    tiny_model, tmp_path, caplog
):
    loss = SimCSELoss(tiny_model, training_head="mlp")
    folder = tmp_path / "copied-checkpoint"
    folder.mkdir()
    save_file(loss_state_dict(loss, tiny_model), str(folder / LOSS_STATE_FILE))
    trained_head = loss.head[0].weight.detach().clone()
    torch.nn.init.zeros_(loss.head[0].weight)
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path / "run"), report_to="none")
    resumed, fresh = TrainerState(global_step=2), TrainerState(global_step=0)

    LossStateCallback(loss, resume_from_checkpoint=folder).on_train_begin(
        args, fresh, TrainerControl(), model=tiny_model
    )
    assert not loss.head[0].weight.any()  # a fresh start keeps the initialisation
    LossStateCallback(loss, resume_from_checkpoint=folder).on_train_begin(
        args, resumed, TrainerControl(), model=tiny_model
    )
    assert torch.equal(loss.head[0].weight, trained_head)

    with caplog.at_level(logging.WARNING):  # the default folder, <output_dir>/checkpoint-2, has no loss state
        LossStateCallback(loss).on_train_begin(args, resumed, TrainerControl(), model=tiny_model)
    assert f"{tmp_path / 'run' / 'checkpoint-2'} has no {LOSS_STATE_FILE}" in caplog.text


def test_a_failed_write_is_a_checkpoint_write_error_naming_the_folder(tiny_model, tmp_path):
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path / "run"), report_to="none")
    callback = LossStateCallback(SimCSELoss(tiny_model, training_head="mlp"))
    with pytest.raises(CheckpointWriteError, match=r"Could not write .*run/checkpoint-2: .*MiB are free"):
        callback.on_save(
            args, TrainerState(global_step=2), TrainerControl(), model=tiny_model
        )  # the folder is missing
