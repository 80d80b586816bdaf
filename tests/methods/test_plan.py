"""TrainingStage: a loss given or built at the stage's start from a reset random state; its trainer gets the stage's
class and arguments; a stage runs (hooks, trainer, hooks) and a plan trains every step in order in one call."""

from __future__ import annotations

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainingArguments

from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods import MethodPlan, ModelUpdate, PlanHooks, TrainingStage
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


def _recorded_stage(model, name, sentences, calls):
    """A two-step stage whose hooks record when they run and whether the model was trained in between."""
    args = SentenceTransformerTrainingArguments(
        output_dir=f"stages/{name}/checkpoints", max_steps=2, per_device_train_batch_size=4, report_to="none"
    )
    start = {}

    def before(trained_model):
        start["weights"] = [parameter.detach().clone() for parameter in trained_model.parameters()]
        calls.append(f"before {name}")

    def after(trained_model):
        changed = any(
            not torch.equal(old, new.detach()) for old, new in zip(start["weights"], trained_model.parameters())
        )
        calls.append(f"after {name} ({'trained' if changed else 'untrained'})")

    data = Dataset.from_dict({"anchor": sentences, "positive": sentences})
    return TrainingStage(name, data, SimCSELoss(model), args, before=[before], after=[after])


def test_a_stage_runs_its_hooks_around_its_trainer_in_the_given_folder(tmp_path, tiny_model, wiki_sentences):
    calls = []
    stage = _recorded_stage(tiny_model, "only", wiki_sentences[:8], calls)

    def before_training(trainer):
        calls.append(f"trainer at step {trainer.state.global_step}, writing {trainer.args.output_dir}")

    output = stage.run(tiny_model, output_dir=tmp_path / "run", before_training=before_training)
    checkpoints = tmp_path / "run" / "stages" / "only" / "checkpoints"
    assert calls == ["before only", f"trainer at step 0, writing {checkpoints}", "after only (trained)"]
    assert output.global_step == 2 and (checkpoints / "checkpoint-2").is_dir()
    assert stage.args.output_dir == "stages/only/checkpoints" == str(stage.checkpoint_dir())  # the stage is unchanged


def test_a_plan_of_two_stages_trains_in_one_call(tmp_path, tiny_model, wiki_sentences):
    calls = []

    def halve(model):  # a weight update between the stages, e.g. an average
        calls.append("halve")
        with torch.no_grad():
            next(model.parameters()).mul_(0.5)

    first = _recorded_stage(tiny_model, "first", wiki_sentences[:8], calls)
    second = _recorded_stage(tiny_model, "second", wiki_sentences[8:16], calls)
    plan = MethodPlan(tiny_model, [first, ModelUpdate("halve", halve), second])
    outputs = plan.train(tmp_path / "run")
    assert calls == ["before first", "after first (trained)", "halve", "before second", "after second (trained)"]
    assert {name: output.global_step for name, output in outputs.items()} == {"first": 2, "second": 2}
    assert sorted(path.name for path in (tmp_path / "run" / "stages").iterdir()) == ["first", "second"]
    assert (tmp_path / "run" / "stages" / "second" / "checkpoints" / "checkpoint-2").is_dir()


class _RecordingHooks(PlanHooks):
    def __init__(self, calls):
        self.calls = calls

    def before_step(self, step):
        self.calls.append(f"hook: step {step.name}")

    def before_training(self, stage, trainer):
        self.calls.append(f"hook: trainer of {stage.name} at step {trainer.state.global_step}")

    def after_step(self, step, output):
        self.calls.append(f"hook: {step.name} done" + (f" at step {output.global_step}" if output else ""))


def _two_stage_plan(model, sentences, calls):
    def halve(trained_model):
        calls.append("halve")
        with torch.no_grad():
            next(trained_model.parameters()).mul_(0.5)

    first = _recorded_stage(model, "first", sentences[:8], calls)
    second = _recorded_stage(model, "second", sentences[8:16], calls)
    return MethodPlan(model, [first, ModelUpdate("halve", halve), second])


def test_the_plan_s_one_loop_runs_the_caller_s_hooks_around_each_step(tmp_path, tiny_model, wiki_sentences):
    calls = []
    _two_stage_plan(tiny_model, wiki_sentences, calls).train(tmp_path / "run", hooks=_RecordingHooks(calls))
    assert calls == [
        "hook: step first",
        "before first",
        "hook: trainer of first at step 0",
        "after first (trained)",
        "hook: first done at step 2",
        "hook: step halve",
        "halve",
        "hook: halve done",
        "hook: step second",
        "before second",
        "hook: trainer of second at step 0",
        "after second (trained)",
        "hook: second done at step 2",
    ]


def test_a_dry_run_of_the_plan_builds_each_trainer_and_changes_nothing(tmp_path, tiny_model, wiki_sentences):
    calls = []
    weights = [parameter.detach().clone() for parameter in tiny_model.parameters()]
    outputs = _two_stage_plan(tiny_model, wiki_sentences, calls).train(
        tmp_path / "run", hooks=_RecordingHooks(calls), dry_run=True
    )
    assert outputs == {}
    assert calls == [
        "hook: step first",
        "hook: trainer of first at step 0",
        "hook: step halve",
        "hook: step second",
        "hook: trainer of second at step 0",
    ]
    assert all(torch.equal(old, new) for old, new in zip(weights, tiny_model.parameters()))
    assert not list(tmp_path.rglob("checkpoint-*"))  # the trainers may make their folders, nothing more
