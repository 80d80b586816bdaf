"""The pixel-linguist recipe: curriculum order, weight averaging, leapfrogging, data checks, reload."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformer

from sbert_nonling.app import get_recipe, load_recipe, train_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.methods import ModelUpdate, build_pixel_linguist
from tests.conftest import cited


def test_recipe_carries_the_paper_settings():
    recipe = get_recipe("pixel-linguist")
    assert recipe["model"] == "Team-PIXEL/pixel-base" and recipe["max_patches"] == 64
    assert (recipe["temperature"], recipe["token_head"]) == (0.05, "linear_gelu_layernorm")
    assert (recipe["visual"]["learning_rate"], recipe["visual"]["batch_size"], recipe["visual"]["max_steps"]) == (
        3e-6,
        768,
        1300,
    )
    assert (recipe["topical"]["learning_rate"], recipe["topical"]["batch_size"]) == (3e-5, 128)
    assert (
        recipe["reasoning"]["learning_rate"],
        recipe["reasoning"]["batch_size"],
        recipe["reasoning"]["max_steps"],
    ) == (3e-5, 128, 2600)
    assert recipe["leapfrog_iterations"] == 0 and len(recipe["perturbation_sets"]) == 7


@pytest.fixture(scope="module")
def small_inputs(tmp_path_factory, data_dir):
    root = tmp_path_factory.mktemp("pixel-inputs")
    wiki = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:96]
    (root / "wiki.txt").write_text("\n".join(wiki) + "\n", encoding="utf-8")
    nli = (data_dir / "corpus" / "snli_devtest_triplets.csv").read_text(encoding="utf-8").splitlines()[:97]
    (root / "nli.csv").write_text("\n".join(nli) + "\n", encoding="utf-8")
    multi = root / "stsb_multi"
    multi.mkdir()
    for language in ("en", "de"):
        for split, rows in (("train", 48), ("dev", 40)):
            name = f"stsb-{language}-{split}.csv"
            lines = (data_dir / "stsb_multi" / name).read_text(encoding="utf-8").splitlines()[:rows]
            (multi / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_curriculum_runs_end_to_end_and_reloads(tmp_path, small_inputs, small_sts_dir):
    overrides = {"leapfrog_iterations": 1, "parallel_languages": ["de"], "eval_steps": 2}
    for stage in ("visual", "topical", "reasoning", "parallel"):
        overrides[f"{stage}.batch_size"] = 16
    result = train_recipe(
        "pixel-linguist",
        tmp_path / "run",
        DataSources(
            text_file=small_inputs / "wiki.txt",
            nli_file=small_inputs / "nli.csv",
            sts_dir=small_sts_dir,
            stsb_multi_dir=small_inputs / "stsb_multi",
        ),
        tiny=True,
        max_steps=2,
        overrides=overrides,
    )
    names = [stage["name"] for stage in result["stages"]]
    assert names == [
        "visual-0-substitute_visual+swap",
        "visual-1-conditional_shuffle",
        "visual-average",
        "topical",
        "reasoning",
        "leapfrog-0-parallel",
        "leapfrog-0-reasoning",
    ]
    assert result["stages"][2]["runs"] == 2
    assert all(stage["global_step"] == 2 for stage in result["stages"] if stage["stage"] != "average")
    assert result["stages"][5]["pairs"] == 2 * 48  # both sentences of every English / German train row
    assert set(result["dev_after"]) == {"STSBenchmark", "SICK-R", "avg"}
    assert set(result["multilingual_after"]) == {
        "STSBenchmarkMultilingualSTS-en",
        "STSBenchmarkMultilingualSTS-de",
        "avg",
    }
    assert result["export"] is None
    assert {"xiao2024pixel", "radford2021clip"} <= cited(result["model"])  # SymmetricInfoNCE's papers
    model = SentenceTransformer(result["model"], trust_remote_code=True)
    embeddings = model.encode(["A man is playing a guitar.", "Ein Mann spielt Gitarre."], convert_to_tensor=True)
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(2))
    assert (tmp_path / "run" / "stages" / "reasoning" / "checkpoints").is_dir()


def test_stages_need_their_data_and_can_be_skipped(tmp_path, small_inputs):
    with pytest.raises(
        ValueError, match="reasoning stage trains on NLI premise and entailment hypothesis.*pass nli_file"
    ):
        train_recipe(
            "pixel-linguist",
            tmp_path / "no-nli",
            DataSources(text_file=small_inputs / "wiki.txt"),
            tiny=True,
            overrides={"visual.max_steps": 0, "topical.max_steps": 0},
        )
    result = train_recipe(
        "pixel-linguist",
        tmp_path / "nli-only",
        DataSources(nli_file=small_inputs / "nli.csv"),
        tiny=True,
        max_steps=1,
        overrides={"visual.max_steps": 0, "topical.max_steps": 0, "reasoning.batch_size": 8},
    )
    assert [stage["name"] for stage in result["stages"]] == ["reasoning"]


def test_builder_lays_out_the_curriculum_as_stages_and_one_weight_average(
    tmp_path, monkeypatch, small_inputs, small_sts_dir
):
    monkeypatch.chdir(tmp_path)
    config = load_recipe(
        "pixel-linguist", tiny=True, overrides={"topical.max_steps": 0, "visual.max_steps": 1, "visual.batch_size": 8}
    )
    plan = build_pixel_linguist(
        config,
        DataSources(text_file=small_inputs / "wiki.txt", nli_file=small_inputs / "nli.csv", sts_dir=small_sts_dir),
    )
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert [step.name for step in plan.stages] == [
        *(f"visual-{index}-{'+'.join(names)}" for index, names in enumerate(config.perturbation_sets)),
        "visual-average",
        "reasoning",
    ]
    first, second, average, reasoning = plan.stages
    assert isinstance(average, ModelUpdate) and average.record == {"stage": "average", "runs": 2}
    assert (first.args.learning_rate, first.args.max_steps, first.seed) == (
        config.visual.learning_rate,
        1,
        config.seed,
    )
    assert (reasoning.args.learning_rate, reasoning.args.per_device_train_batch_size) == (
        config.reasoning.learning_rate,
        config.reasoning.batch_size,
    )
    assert reasoning.args.output_dir == "stages/reasoning/checkpoints" and reasoning.record == {
        "stage": "reasoning",
        "pairs": 96,
    }
    # each run's loss is drawn from the same seeded state: the token heads of two runs start equal
    heads = [stage.build_loss().token_head[0].weight.detach().clone() for stage in (first, second)]
    torch.testing.assert_close(heads[0], heads[1])
    # the visual runs start from one state and end averaged
    start = {key: value.clone() for key, value in plan.model.state_dict().items()}
    for stage in (first, second):
        stage.run(plan.model, plan.evaluator)  # back to the start before, weights kept after
    trained = first.after[0].__self__.states
    torch.testing.assert_close(second.before[0].__self__.start, start)
    average.apply(plan.model)
    key = next(
        name for name, value in start.items() if value.is_floating_point() and not torch.equal(trained[0][name], value)
    )
    torch.testing.assert_close(plan.model.state_dict()[key], (trained[0][key] + trained[1][key]) / 2)


def test_wrong_data_fails_while_building(small_inputs):
    config = load_recipe("pixel-linguist", tiny=True)
    with pytest.raises(
        ValueError, match="parallel stage trains on English sentence and its translation: pass stsb_multi_dir"
    ):
        build_pixel_linguist(
            config.replace(leapfrog_iterations=1),
            DataSources(text_file=small_inputs / "wiki.txt", nli_file=small_inputs / "nli.csv"),
        )
    with pytest.raises(ValueError, match="not both"):
        train_recipe(
            "pixel-linguist",
            small_inputs / "run",
            DataSources(text_file=small_inputs / "wiki.txt"),
            tiny=True,
            overrides={"model": "Team-PIXEL/pixel-base"},
        )
