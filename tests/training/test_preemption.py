"""SIGTERM / SIGINT inside a real trainer: the step finishes, a complete checkpoint is written, training stops."""

from __future__ import annotations

import os
import signal

import pytest
from transformers import TrainerCallback

from sbert_nonling.training.checkpoints import checkpoint_damage, last_complete_checkpoint
from sbert_nonling.training.preemption import TrainingPreempted
from tests.training.test_checkpoints import make_trainer


class SignalDuringStep(TrainerCallback):
    """Sends ``signal_number`` to this process during step ``step`` (after its forward / backward began)."""

    def __init__(self, signal_number: int, step: int) -> None:
        self.signal_number, self.step = signal_number, step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step + 1 == self.step:
            os.kill(os.getpid(), self.signal_number)


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_finishes_the_step_saves_and_stops(tmp_path, tiny_encoder_dir, wiki_sentences, signal_number):
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    trainer = make_trainer(tiny_encoder_dir, wiki_sentences[:64], tmp_path, max_steps=6)
    trainer.add_callback(SignalDuringStep(signal_number, step=3))
    with pytest.raises(
        TrainingPreempted,
        match=rf"stopped by {signal.Signals(signal_number).name}; .*checkpoint-3 is a complete checkpoint.*--resume",
    ) as stop:
        trainer.train()
    assert stop.value.signal_number == signal_number and trainer.state.global_step == 3
    assert (
        last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-3")
        and checkpoint_damage(tmp_path / "checkpoint-3") is None
    )
    assert {number: signal.getsignal(number) for number in handlers} == handlers  # the previous handlers are back

    resumed = make_trainer(tiny_encoder_dir, wiki_sentences[:64], tmp_path, max_steps=6)
    resumed.train(resume_from_checkpoint=True)
    assert resumed.state.global_step == 6


def test_the_message_of_a_recipe_that_does_not_resume():
    stop = TrainingPreempted(signal.SIGTERM, "runs/x/stages/topical/checkpoints/checkpoint-7", resumable=False)
    assert "does not resume: start it again with --overwrite" in str(stop) and "--resume" not in str(stop)


@pytest.mark.parametrize("stopped", [False, True])
def test_a_stopped_run_exits_without_loading_its_best_checkpoint(
    tmp_path, tiny_encoder_dir, wiki_sentences, small_sts_dir, caplog, stopped
):
    import logging

    from sbert_nonling.evaluation.sts import sts_dev_evaluator
    from sbert_nonling.losses.simcse import SimCSELoss
    from sbert_nonling.models import build_sentence_model
    from sbert_nonling.training import NonLinguisticTrainer
    from tests.training.conftest import small_run_arguments
    from tests.training.test_checkpoints import sentence_pairs_dataset

    model = build_sentence_model(tiny_encoder_dir)
    args = small_run_arguments(
        tmp_path,
        4,
        eval_strategy="steps",
        eval_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model="eval_STSBenchmark_spearman_cosine",
    )
    trainer = NonLinguisticTrainer(
        model=model,
        args=args,
        train_dataset=sentence_pairs_dataset(wiki_sentences[:64]),
        loss=SimCSELoss(model),
        evaluator=sts_dev_evaluator(small_sts_dir),
    )
    if stopped:
        trainer.add_callback(SignalDuringStep(signal.SIGTERM, step=4))
    with caplog.at_level(logging.INFO, logger="sentence_transformers"):
        if stopped:
            with pytest.raises(TrainingPreempted):
                trainer.train()
        else:
            trainer.train()
    assert ("Loading best model" in caplog.text) is not stopped  # resume loads it when the run finishes
