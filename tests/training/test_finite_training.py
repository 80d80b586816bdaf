"""A non-finite loss, non-finite weights or a NaN selection score stop training with TrainingDiverged naming the
step."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformerTrainingArguments
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import TrainerControl, TrainerState

from sbert_nonling import SimCSELoss
from sbert_nonling.training.finite_training import (
    LOSS_CHUNK,
    FiniteTrainingCallback,
    TrainingDiverged,
    check_finite_loss,
    non_finite_parameters,
)


def test_non_finite_tensors_are_named():
    tensors = [
        ("a", torch.ones(2)),
        ("b", torch.tensor([1.0, float("nan")])),
        ("c", torch.tensor([float("inf")])),
        ("d", torch.ones(2, dtype=torch.long)),
    ]
    assert non_finite_parameters(tensors) == ["b", "c"]


def test_a_nan_loss_names_the_step_and_the_kept_checkpoint(tmp_path):
    check_finite_loss(torch.tensor(0.5), 3, tmp_path)
    with pytest.raises(
        TrainingDiverged, match=r"step 3: the loss is nan\. .*no checkpoint had been written.*--overwrite"
    ):
        check_finite_loss(torch.tensor(float("nan")), 3, tmp_path)


def test_non_finite_weights_of_the_model_or_of_a_loss_head_stop_the_run(tiny_model, tmp_path):
    loss = SimCSELoss(tiny_model, training_head="mlp")
    callback = FiniteTrainingCallback(loss)
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), report_to="none")
    state = TrainerState(global_step=7, max_steps=20)
    saving = TrainerControl(should_save=True)
    callback.on_step_end(args, state, saving, model=tiny_model)  # all finite: nothing happens
    with torch.no_grad():
        loss.head[0].weight[0, 0] = float("inf")
    callback.on_step_end(
        args, state, TrainerControl(), model=tiny_model
    )  # no checkpoint at this step: weights unchecked
    with pytest.raises(
        TrainingDiverged, match=r"step 7: 1 weights hold NaN or infinite values \(first: loss.head.0.weight\)"
    ):
        callback.on_step_end(args, state, saving, model=tiny_model)  # before the checkpoint is written
    with pytest.raises(TrainingDiverged, match="step 20"):
        callback.on_step_end(
            args, TrainerState(global_step=20, max_steps=20), TrainerControl(), model=tiny_model
        )  # the end


def test_a_nan_selection_score_is_an_error_not_a_selection(tiny_model, tmp_path):
    callback = FiniteTrainingCallback(SimCSELoss(tiny_model))
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), report_to="none", metric_for_best_model="eval_STSBenchmark_spearman_cosine"
    )
    callback.on_evaluate(
        args, TrainerState(global_step=4), TrainerControl(), metrics={"eval_STSBenchmark_spearman_cosine": 0.7}
    )
    with pytest.raises(TrainingDiverged, match=r"step 4: the dev score eval_STSBenchmark_spearman_cosine is NaN"):
        callback.on_evaluate(
            args,
            TrainerState(global_step=4),
            TrainerControl(),
            metrics={"eval_STSBenchmark_spearman_cosine": float("nan")},
        )


class OperatorCount(TorchDispatchMode):
    """Counts the ATen operators dispatched while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.operators: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.operators.append(str(func))
        return func(*args, **(kwargs or {}))


def test_finite_weights_cost_one_sync_and_at_most_one_operator_per_tensor():
    tensors = [(f"layer{index}", torch.ones(4, 4)) for index in range(48)]
    with OperatorCount() as count:
        assert non_finite_parameters(tensors) == []
    assert count.operators.count("aten._local_scalar_dense.default") == 1
    assert len(count.operators) <= 48 + 8  # not abs + ne + eq + all per tensor (isfinite's decomposition)


def test_step_losses_are_checked_at_the_next_logging_step_naming_the_first_non_finite_one(tiny_model, tmp_path):
    callback = FiniteTrainingCallback(SimCSELoss(tiny_model))
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), report_to="none")
    for step, value in ((1, 0.5), (2, float("nan")), (3, float("inf"))):
        callback.record_loss(torch.tensor(value), step)
        if step < 3:
            with OperatorCount() as count:
                callback.on_step_end(
                    args, TrainerState(global_step=step, max_steps=20), TrainerControl(), model=tiny_model
                )
            assert count.operators == []  # an ordinary step: nothing is checked, nothing waits for the device
    with pytest.raises(TrainingDiverged, match=r"step 2: the loss is nan\. "):
        callback.on_step_end(
            args, TrainerState(global_step=3, max_steps=20), TrainerControl(should_log=True), model=tiny_model
        )
    callback.on_step_end(
        args, TrainerState(global_step=4, max_steps=20), TrainerControl(should_log=True), model=tiny_model
    )  # checked once


def test_more_step_losses_than_a_chunk_between_checks_keep_their_steps(tiny_model, tmp_path):
    callback = FiniteTrainingCallback(SimCSELoss(tiny_model))
    for step in range(1, LOSS_CHUNK + 3):
        callback.record_loss(torch.tensor(float("inf") if step == LOSS_CHUNK + 1 else 1.0), step)
    with pytest.raises(TrainingDiverged, match=rf"step {LOSS_CHUNK + 1}: the loss is inf"):
        callback.check_losses(tmp_path)
