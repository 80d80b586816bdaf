"""A non-finite loss, non-finite weights or a NaN selection score stop training with TrainingDiverged naming the step."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformerTrainingArguments
from transformers import TrainerControl, TrainerState

from sbert_nonling import SimCSELoss
from sbert_nonling.training.finite_training import FiniteTrainingCallback, TrainingDiverged, check_finite_loss, non_finite_parameters


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
    with pytest.raises(TrainingDiverged, match=r"step 3: the loss is nan\. .*no checkpoint had been written.*--overwrite"):
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
    callback.on_step_end(args, state, TrainerControl(), model=tiny_model)  # no checkpoint at this step: weights unchecked
    with pytest.raises(TrainingDiverged, match=r"step 7: 1 weights hold NaN or infinite values \(first: loss.head.0.weight\)"):
        callback.on_step_end(args, state, saving, model=tiny_model)  # before the checkpoint is written
    with pytest.raises(TrainingDiverged, match="step 20"):
        callback.on_step_end(args, TrainerState(global_step=20, max_steps=20), TrainerControl(), model=tiny_model)  # the end


def test_a_nan_selection_score_is_an_error_not_a_selection(tiny_model, tmp_path):
    callback = FiniteTrainingCallback(SimCSELoss(tiny_model))
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), report_to="none", metric_for_best_model="eval_STSBenchmark_spearman_cosine")
    callback.on_evaluate(args, TrainerState(global_step=4), TrainerControl(), metrics={"eval_STSBenchmark_spearman_cosine": 0.7})
    with pytest.raises(TrainingDiverged, match=r"step 4: the dev score eval_STSBenchmark_spearman_cosine is NaN"):
        callback.on_evaluate(args, TrainerState(global_step=4), TrainerControl(), metrics={"eval_STSBenchmark_spearman_cosine": float("nan")})
