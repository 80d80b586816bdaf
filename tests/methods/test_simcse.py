"""build_simcse: the pieces of SimCSE from its config, without writing anything; a plain trainer runs them."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformerTrainer

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods import build_simcse


def _text_file(tmp_path, data_dir, lines=64):
    path = tmp_path / "data" / "wiki.txt"
    path.parent.mkdir()
    text = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:lines]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def test_unsup_pieces_follow_the_config_and_nothing_is_written(tmp_path, monkeypatch, data_dir, small_sts_dir):
    text_file = _text_file(tmp_path, data_dir)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    config = load_recipe("simcse-unsup", tiny=True, overrides={"batch_size": 8, "max_steps": 2, "eval_steps": 2})
    plan = build_simcse(config, DataSources(text_file=text_file, sts_dir=small_sts_dir))
    assert list(work.iterdir()) == []
    (stage,) = plan.stages
    assert plan.evaluations == {}
    assert stage.train_dataset.column_names == ["anchor", "positive"] and len(stage.train_dataset) == 64
    assert stage.train_dataset[0]["anchor"] == stage.train_dataset[0]["positive"]
    assert isinstance(stage.loss, SimCSELoss) and stage.loss.temperature == config.temperature
    assert (stage.args.learning_rate, stage.args.per_device_train_batch_size, stage.args.max_steps) == (
        config.learning_rate,
        8,
        2,
    )
    assert stage.args.output_dir == "checkpoints" and stage.args.load_best_model_at_end
    assert plan.model.max_seq_length == config.max_seq_length
    # a user's script: the plan's pieces in a plain sentence-transformers trainer
    before = plan.model.encode(["A man is playing a guitar."], convert_to_tensor=True)
    trainer = SentenceTransformerTrainer(
        model=plan.model, args=stage.args, train_dataset=stage.train_dataset, loss=stage.loss, evaluator=plan.evaluator
    )
    trainer.train()
    assert trainer.state.global_step == 2 and (work / "checkpoints" / "checkpoint-2").is_dir()
    assert not torch.allclose(before, plan.model.encode(["A man is playing a guitar."], convert_to_tensor=True))


def test_sup_reads_nli_triplets_into_the_mlp_pooling(tmp_path, data_dir):
    nli = tmp_path / "nli.csv"
    nli.write_text(
        "\n".join((data_dir / "corpus" / "snli_devtest_triplets.csv").read_text(encoding="utf-8").splitlines()[:33])
        + "\n",
        encoding="utf-8",
    )
    config = load_recipe("simcse-sup", tiny=True)
    plan = build_simcse(config, DataSources(nli_file=nli))
    assert (
        plan.stages[0].train_dataset.column_names == ["anchor", "positive", "negative"]
        and len(plan.stages[0].train_dataset) == 32
    )
    assert plan.evaluator is None and not plan.stages[0].args.load_best_model_at_end
    assert [type(module).__name__ for module in plan.model][-1] == "Dense"  # cls_mlp: the MLP stays in the model


def test_evaluation_during_training_scores_stsb_dev_alone_unless_eval_tasks_all(tmp_path, data_dir, small_sts_dir):
    """The evaluator every eval_steps serves checkpoint selection (STS-B dev); the full dev table comes before and
    after."""
    text_file = _text_file(tmp_path, data_dir)
    names = {}
    for eval_tasks in ("selection", "all"):
        config = load_recipe(
            "simcse-unsup", tiny=True, overrides={"batch_size": 8, "max_steps": 2, "eval_tasks": eval_tasks}
        )
        plan = build_simcse(config, DataSources(text_file=text_file, sts_dir=small_sts_dir))
        names[eval_tasks] = [evaluator.name for evaluator in plan.evaluator.evaluators]
    assert names == {"selection": ["STSBenchmark"], "all": ["STSBenchmark", "SICK-R"]}
    assert load_recipe("simcse-unsup").eval_tasks == "selection"


@pytest.mark.parametrize(("recipe", "name"), [("simcse-unsup", "text"), ("simcse-sup", "nli")])
def test_step_counts_name_the_one_dataset(recipe, name, tmp_path, monkeypatch, data_dir):
    """Keyed by dataset name as in the recipes with several datasets (text + image, text + captions), not "train"."""
    monkeypatch.chdir(tmp_path)
    data = DataSources(
        text_file=_text_file(tmp_path, data_dir), nli_file=data_dir / "corpus" / "snli_devtest_triplets.csv"
    )
    plan = build_simcse(load_recipe(recipe, tiny=True, overrides={"batch_size": 8, "max_steps": 2}), data)
    trainer = plan.stages[0].trainer(plan.model)
    trainer.train()
    assert dict(trainer.step_counts) == {name: 2}
