"""TrainingStage: a loss given or built at the stage's start from a reset random state; its trainer gets the stage's
class and arguments."""

from __future__ import annotations

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainingArguments

from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods import TrainingStage
from sbert_nonling.training import UnpairedModalityTrainer


def _args(tmp_path):
    return SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, report_to="none"
    )


def test_a_loss_function_is_built_when_asked_from_the_seeded_state(tmp_path, tiny_model):
    data = Dataset.from_dict({"anchor": ["a", "b"], "positive": ["a", "b"]})
    stage = TrainingStage("run", data, lambda: SimCSELoss(tiny_model, training_head="mlp"), _args(tmp_path), seed=5)
    first, second = stage.build_loss(), stage.build_loss()
    assert first is not second
    torch.testing.assert_close(first.head[0].weight, second.head[0].weight)  # the same draw: seed 5 both times
    unseeded = TrainingStage("run", data, lambda: SimCSELoss(tiny_model, training_head="mlp"), _args(tmp_path))
    assert not torch.equal(unseeded.build_loss().head[0].weight, unseeded.build_loss().head[0].weight)
    given = SimCSELoss(tiny_model)
    assert TrainingStage("run", data, given, _args(tmp_path)).build_loss() is given


def test_the_trainer_is_the_stage_class_with_its_arguments(tmp_path, tiny_model):
    data = Dataset.from_dict({"anchor": ["a", "b"], "positive": ["a", "b"]})
    stage = TrainingStage(
        "run",
        {"second": data, "text": data},
        {"second": SimCSELoss(tiny_model), "text": SimCSELoss(tiny_model)},
        _args(tmp_path),
        trainer_class=UnpairedModalityTrainer,
        trainer_kwargs={"scheme": "alternating", "learning_rates": {"second": 1e-5}},
    )
    trainer = stage.trainer(tiny_model)
    assert (
        isinstance(trainer, UnpairedModalityTrainer)
        and trainer.scheme == "alternating"
        and trainer.learning_rates == {"second": 1e-5}
        and trainer.args.output_dir == stage.args.output_dir  # a copy: checkpoint rotation is the trainer's callback's
    )
