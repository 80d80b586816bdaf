from __future__ import annotations

import json

import numpy as np
import pytest
from datasets import Dataset, DatasetDict
from safetensors.torch import load_file
from sentence_transformers import (
    SentenceTransformer,
    SentenceTransformerTrainingArguments,
)
from sentence_transformers.base.sampler import BatchSamplers

from sbert_nonling.app import RunOptions, get_recipe, load_recipe, run_method, train_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.methods import build_multitask, task_losses
from sbert_nonling.training.multitask_sampler import multitask_sampler_arguments
from sbert_nonling.training.trainer import NonLinguisticTrainer
from tests.conftest import cited

#: A tiny encoder and batches small enough for a few CPU steps.
FAST = {
    "tiny_encoder": {"vocab_size": 2000, "hidden_size": 32, "intermediate_size": 64},
    "train_limit": 48,
    "contrastive.batch_size": 8,
    "multitask.batch_size": 8,
    "heads.hidden_dimension": 16,
    "eval_steps": 2,
}


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory, data_dir):
    """SentEval layout: 60 dev / trial pairs and every 40th (STS-B) / 30th (SICK) train row, all genres and labels."""
    root = tmp_path_factory.mktemp("tasks")
    files = {
        ("STSBenchmark", "sts-dev.csv"): lambda lines: lines[:60],
        ("SICK", "SICK_trial.txt"): lambda lines: lines[:60],
        ("STSBenchmark", "sts-train.csv"): lambda lines: lines[::40],
        ("SICK", "SICK_train.txt"): lambda lines: lines[::30],
    }
    for (folder, name), pick in files.items():
        (root / folder).mkdir(exist_ok=True)
        lines = (data_dir / "sts" / folder / name).read_text(encoding="utf-8").splitlines()
        (root / folder / name).write_text("\n".join(pick(lines)) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def nli_file(tmp_path_factory, data_dir):
    path = tmp_path_factory.mktemp("nli") / "nli.csv"
    path.write_text(
        "\n".join((data_dir / "corpus" / "snli_devtest_triplets.csv").read_text(encoding="utf-8").splitlines()[:100])
        + "\n",
        encoding="utf-8",
    )
    return path


def test_recipe_defaults_follow_the_paper():
    recipe = get_recipe("multitask")
    assert (recipe["text_loss"]["temperature"], recipe["heads"]["hidden_dimension"], recipe["heads"]["dropout"]) == (
        0.05,
        768,
        0.3,
    )
    assert (recipe["scheme"], recipe["heads"]["share_head_layer"], recipe["heads"]["pair_head"]) == (
        "average",
        True,
        "bilinear",
    )
    assert recipe["tasks"] == ["classification", "pair_classification", "sts"]
    for stage in ("contrastive", "multitask"):
        assert 1e-5 <= recipe[stage]["learning_rate"] <= 3e-5 and 16 <= recipe[stage]["batch_size"] <= 64
    tiny = get_recipe("multitask", tiny=True)
    assert tiny["contrastive"]["max_steps"] > 0 and tiny["multitask"]["max_steps"] > 0 and tiny["train_limit"]


def test_recipe_trains_both_stages_selects_on_dev_and_keeps_heads_out_of_the_model(tmp_path, task_dir, nli_file):
    result = train_recipe(
        "multitask",
        tmp_path / "run",
        DataSources(nli_file=nli_file, sts_dir=task_dir),
        tiny=True,
        max_steps=2,
        overrides=FAST,
    )
    assert [stage["stage"] for stage in result["stages"]] == ["contrastive", "multitask"]
    assert {"cs224n_contrastive_generalizable", "gao2021simcse"} <= cited(result["model"])  # both stages' losses
    assert result["global_step"] == 4 and set(result["dev_after"]) == {"STSBenchmark", "SICK-R", "avg"}
    multitask = result["stages"][1]
    assert multitask["examples"] == {"classification": 48, "pair_classification": 48, "sts": 96}
    assert multitask["labels"]["pair_classification"] == ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
    assert result["best_checkpoint"].startswith(str(tmp_path / "run" / "stages" / "multitask" / "checkpoints"))
    state = json.loads(
        (tmp_path / "run" / "stages" / "multitask" / "checkpoints" / "checkpoint-2" / "trainer_state.json").read_text()
    )
    assert any("eval_STSBenchmark_spearman_cosine" in entry for entry in state["log_history"])
    heads = load_file(
        str(tmp_path / "run" / "stages" / "multitask" / "checkpoints" / "checkpoint-2" / "loss_state.safetensors")
    )
    assert "classification.classifier.weight" in heads and "pair_classification.classifier.weight" in heads
    assert sum(key.endswith("head_layer.linear.weight") for key in heads) == 2  # classification's own + the shared one
    full = SentenceTransformer(result["model"], trust_remote_code=True)
    assert not any("head_layer" in key or "classifier" in key for key in full.state_dict())
    plain = SentenceTransformer(result["export"])
    np.testing.assert_allclose(plain.encode(["a dog runs"]), full.encode(["a dog runs"]), atol=1e-6)
    # the run record every recipe leaves: the settings used, the result, a model card in each saved folder
    recipe = json.loads((tmp_path / "run" / "recipe.json").read_text())
    assert recipe["method"] == "multitask" and recipe["multitask"]["max_steps"] == 2 and recipe["tiny"] is True
    assert json.loads((tmp_path / "run" / "results.json").read_text()) == json.loads(json.dumps(result))
    for folder in ("model", "export"):
        card = (tmp_path / "run" / folder / "README.md").read_text()
        assert "multitask" in card and "sts_dir: " in card and "nli_file: " in card


def _toy_tasks():
    return DatasetDict(
        {
            "classification": Dataset.from_dict(
                {"sentence": ["a dog runs", "stocks fell", "a cat sleeps", "rates rose"], "label": [0, 1, 0, 1]}
            ),
            "pair_classification": Dataset.from_dict(
                {
                    "sentence1": ["a dog runs", "a man eats", "a boy sings"],
                    "sentence2": ["a dog moves", "nobody eats", "a boy is singing"],
                    "label": [0, 2, 0],
                }
            ),
            "sts": Dataset.from_dict(
                {
                    "sentence1": ["a plane flies", "a man cooks"],
                    "sentence2": ["a jet flies", "a girl swims"],
                    "score": [0.9, 0.1],
                }
            ),
        }
    )


@pytest.mark.parametrize(("scheme", "batches_per_step"), [("average", 3), ("round_robin", 1), ("proportional", 1)])
def test_schemes_the_average_scheme_logs_the_mean_of_one_batch_per_task(
    tmp_path, tiny_model, scheme, batches_per_step
):
    tasks = _toy_tasks()
    losses = task_losses(tiny_model, list(tasks), {"classification": 2, "pair_classification": 3}, hidden_dimension=16)
    calls = []
    for name, loss in losses.items():
        original = loss.forward

        def recorded(features, labels, original=original, name=name):
            value = original(features, labels)
            calls.append((name, value.item()))
            return value

        loss.forward = recorded
    sampler_arguments = multitask_sampler_arguments(scheme, len(tasks))
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        max_steps=1,
        logging_steps=1,
        learning_rate=1e-4,
        report_to="none",
        save_strategy="no",
        seed=3,
        **sampler_arguments,
    )
    trainer = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=tasks, loss=losses)
    trainer.train()
    assert len(calls) == batches_per_step
    if scheme == "average":
        assert [name for name, _ in calls] == ["classification", "pair_classification", "sts"]
    logged = next(entry["loss"] for entry in trainer.state.log_history if "loss" in entry)
    assert logged == pytest.approx(sum(value for _, value in calls) / len(calls), rel=1e-3)


def test_missing_data_and_bad_settings(tmp_path, task_dir, nli_file, small_sts_dir):
    with pytest.raises(ValueError, match="pass nli_file"):
        train_recipe("multitask", tmp_path / "a", DataSources(sts_dir=task_dir), tiny=True, overrides=FAST)
    with pytest.raises(
        ValueError, match=r"classification task trains on .*sts-train.csv, which does not exist; pass an sts_dir"
    ):
        train_recipe(
            "multitask",
            tmp_path / "b",
            DataSources(nli_file=nli_file, sts_dir=small_sts_dir),
            tiny=True,
            overrides=FAST,
        )
    with pytest.raises(ValueError, match="pass sts_dir holding"):
        train_recipe("multitask", tmp_path / "c", DataSources(nli_file=nli_file), tiny=True, overrides=FAST)
    with pytest.raises(
        ValueError,
        match=r"setting 'scheme' must be one of \['average', 'round_robin', 'proportional'\], got 'gradient_surgery'",
    ):
        train_recipe(
            "multitask",
            tmp_path / "d",
            DataSources(nli_file=nli_file, sts_dir=task_dir),
            tiny=True,
            overrides={"scheme": "gradient_surgery"},
        )
    with pytest.raises(ValueError, match=r"tasks=\['sentiment'\]: choose one or more of"):
        train_recipe(
            "multitask",
            tmp_path / "e",
            DataSources(nli_file=nli_file, sts_dir=task_dir),
            tiny=True,
            overrides={"tasks": ["sentiment"]},
        )
    with pytest.raises(ValueError, match="resume is not supported by multitask"):
        train_recipe(
            "multitask",
            tmp_path / "f",
            DataSources(nli_file=nli_file, sts_dir=task_dir),
            tiny=True,
            options=RunOptions(resume=True),
        )


def test_run_method_runs_the_method_of_a_config_with_a_contrastive_fourth_task(tmp_path, task_dir, nli_file):
    config = load_recipe(
        "multitask",
        tiny=True,
        overrides={
            **FAST,
            "contrastive.max_steps": 0,
            "multitask.max_steps": 2,
            "tasks": ["sts", "contrastive"],
            "scheme": "round_robin",
        },
    )
    result = run_method(config, DataSources(nli_file=nli_file, sts_dir=task_dir), tmp_path / "run")
    assert [stage["stage"] for stage in result["stages"]] == ["multitask"] and set(result["dev_after"]) == {
        "STSBenchmark",
        "SICK-R",
        "avg",
    }
    assert result["stages"][0]["examples"] == {"sts": 96, "contrastive": 48}
    assert (tmp_path / "run" / "recipe.json").is_file() and (tmp_path / "run" / "model" / "README.md").is_file()


def test_builder_returns_two_stages_whose_heads_are_drawn_when_the_second_starts(
    tmp_path, monkeypatch, task_dir, nli_file
):
    monkeypatch.chdir(tmp_path)
    config = load_recipe(
        "multitask", tiny=True, overrides={**FAST, "contrastive.max_steps": 1, "multitask.max_steps": 1}
    )
    plan = build_multitask(config, DataSources(nli_file=nli_file, sts_dir=task_dir))
    assert list(tmp_path.iterdir()) == []  # nothing written (the tiny encoder was built in a temporary folder)
    contrastive, multitask = plan.stages
    assert plan.evaluator is not None
    assert (contrastive.name, contrastive.args.learning_rate, contrastive.args.per_device_train_batch_size) == (
        "contrastive",
        config.contrastive.learning_rate,
        8,
    )
    assert contrastive.args.output_dir == "stages/contrastive/checkpoints" and contrastive.args.load_best_model_at_end
    assert callable(multitask.loss) and multitask.args.gradient_accumulation_steps == 3  # average: one batch per task
    assert multitask.args.batch_sampler == BatchSamplers.BATCH_SAMPLER
    assert multitask.record["labels"]["pair_classification"] == ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
    losses = multitask.build_loss()
    assert list(losses) == ["classification", "pair_classification", "sts"]
    assert losses["pair_classification"].head_layer is losses["sts"].head_layer  # share_head_layer
    contrastive.trainer(plan.model, plan.evaluator).train()  # a user's own loop: the stage runs with its trainer
    assert (tmp_path / "stages" / "contrastive" / "checkpoints" / "checkpoint-1").is_dir()
