"""run_method: any plan run through its stages' own runs (hooks, weight updates, checkpoints per stage), the dev
scores, the saved model / export and the run record; what it derives from the config and the model (staged reports,
the cards' data lines)."""

from __future__ import annotations

import json

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling.app import RunOptions, load_recipe, run_method
from sbert_nonling.app.runner import reports_stages, training_data
from sbert_nonling.configs import MCSEConfig, MultitaskConfig, SimCSEConfig
from sbert_nonling.data import DataSources
from sbert_nonling.data.image_features import load_image_features
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods import GroundingPlan, MethodPlan, ModelUpdate, TrainingStage


def _stage(model, name, sentences, calls):
    args = SentenceTransformerTrainingArguments(
        output_dir=f"stages/{name}/checkpoints",
        max_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        eval_strategy="steps",
        eval_steps=2,
        save_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model="eval_STSBenchmark_spearman_cosine",
        report_to="none",
    )
    return TrainingStage(
        name,
        Dataset.from_dict({"anchor": sentences, "positive": sentences}),
        lambda: SimCSELoss(model),
        args,
        before=[lambda _: calls.append(f"before {name}")],
        after=[lambda _: calls.append(f"after {name}")],
        record={"stage": "contrastive"},
    )


def test_a_multi_stage_plan_runs_in_one_loop_and_leaves_the_run_record(
    tmp_path, tiny_model, wiki_sentences, small_sts_dir
):
    calls = []

    def zero_pooler(model):  # a weight update between the stages, e.g. an average
        calls.append("update")
        with torch.no_grad():
            next(model.parameters()).mul_(0.5)

    def build(config, data):
        first = _stage(tiny_model, "first", wiki_sentences[:16], calls)
        second = _stage(tiny_model, "second", wiki_sentences[16:32], calls)
        return MethodPlan(
            tiny_model,
            [first, ModelUpdate("halve", zero_pooler, {"stage": "update"}), second],
            sts_dev_evaluator(small_sts_dir),
            evaluations={"norms": lambda model: {"mean": float(model.encode(["a"]).mean())}},
        )

    config = SimCSEConfig(name="two-stages", seed=7)
    result = run_method(
        config, DataSources(text_file=tmp_path / "wiki.txt", sts_dir=small_sts_dir), tmp_path / "run", build
    )
    assert calls == ["before first", "after first", "update", "before second", "after second"]
    assert [entry["name"] for entry in result["stages"]] == ["first", "halve", "second"]
    assert result["global_step"] == 4 and result["stages"][2]["global_step"] == 2
    assert result["best_checkpoint"] == str(tmp_path / "run" / "stages" / "second" / "checkpoints" / "checkpoint-2")
    assert all(set(entry["dev"]) == {"STSBenchmark", "SICK-R", "avg"} for entry in result["stages"])
    assert result["stages"][1]["dev"] != result["stages"][0]["dev"]  # scored after the update
    assert result["dev_after"] == result["stages"][2]["dev"] and set(result["norms"]) == {"mean"}
    recipe = json.loads((tmp_path / "run" / "recipe.json").read_text(encoding="utf-8"))
    assert recipe["name"] == "two-stages" and recipe["seed"] == 7
    assert json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8")) == json.loads(
        json.dumps(result)
    )
    assert "text_file: wiki.txt" in (tmp_path / "run" / "export" / "README.md").read_text(encoding="utf-8")
    full, plain = SentenceTransformer(result["model"], trust_remote_code=True), SentenceTransformer(result["export"])
    torch.testing.assert_close(
        torch.tensor(plain.encode(["a dog runs"])), torch.tensor(full.encode(["a dog runs"])), atol=1e-5, rtol=0
    )


def test_a_single_run_plan_reports_its_run_at_the_top_and_keeps_extracted_features(
    tmp_path, tiny_model, wiki_sentences
):
    calls = []
    config = MCSEConfig(name="one-run")
    features = {"global": torch.arange(6, dtype=torch.float32).reshape(2, 3)}
    stage = _stage(tiny_model, "train", wiki_sentences[:16], calls)
    plan = GroundingPlan(tiny_model, [stage], extracted_features=(["a.jpg", "b.jpg"], features))
    plan.stages[0].args.eval_strategy, plan.stages[0].args.load_best_model_at_end = "no", False
    result = run_method(config, DataSources(), tmp_path / "run", lambda config, data: plan)
    assert "stages" not in result and result["global_step"] == 2 and not reports_stages(config, plan)
    assert set(result["step_counts"]) == {"train"} and result["dev_before"] == {} and result["dev_curve"] == []
    assert (tmp_path / "run" / "stages" / "train" / "checkpoints" / "checkpoint-2").is_dir()
    assert result["export"] == str(tmp_path / "run" / "export")  # the model has a text route: exported
    names, saved = load_image_features(tmp_path / "run" / "image_features.safetensors")  # for --image-features
    assert names == ["a.jpg", "b.jpg"] and torch.equal(saved["global"], features["global"])


def test_resume_is_refused_for_methods_that_restart_and_before_anything_is_built(tmp_path):
    with pytest.raises(ValueError, match="resume is not supported by multitask"):
        run_method(
            MultitaskConfig(name="multitask"),
            DataSources(),
            tmp_path,
            lambda config, data: pytest.fail("built"),
            options=RunOptions(resume=True),
        )


def test_a_method_trained_in_stages_reports_them_even_when_one_is_left(tiny_model, wiki_sentences):
    config = load_recipe("pixel-linguist", tiny=True, overrides={"visual.max_steps": 0, "topical.max_steps": 0})
    one_stage = MethodPlan(tiny_model, [_stage(tiny_model, "reasoning", wiki_sentences[:16], [])])
    assert reports_stages(config, one_stage) and not reports_stages(SimCSEConfig(), one_stage)


def test_the_cards_list_the_data_a_run_trains_on(tmp_path):
    data = DataSources(
        text_file=tmp_path / "wiki.txt",
        nli_file=tmp_path / "nli.csv",
        sts_dir=tmp_path / "sts",
        image_dir=tmp_path / "images",
        stsb_multi_dir=tmp_path / "stsb_multi",
    )
    assert training_data(SimCSEConfig(), data) == ["text_file: wiki.txt", "nli_file: nli.csv"]
    assert training_data(load_recipe("visualcse"), data)[-1] == "image_dir: images"
    assert training_data(load_recipe("multitask"), data)[-1] == "sts_dir: sts"  # its task files
    assert (
        training_data(load_recipe("multitask", overrides={"multitask.max_steps": 0}), data)[-1] == "nli_file: nli.csv"
    )
    assert training_data(load_recipe("pixel-linguist"), data)[-1] == "nli_file: nli.csv"
    leapfrog = load_recipe("pixel-linguist", overrides={"leapfrog_iterations": 1})
    assert training_data(leapfrog, data)[-1] == "stsb_multi_dir: stsb_multi"  # its parallel pairs
