"""The pixel-linguist recipe: curriculum order, weight averaging, leapfrogging, data checks, reload."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformer

from sbert_nonling.training import get_recipe, train_recipe


def test_recipe_carries_the_paper_settings():
    recipe = get_recipe("pixel-linguist")
    assert recipe["model"] == "Team-PIXEL/pixel-base" and recipe["max_patches"] == 64
    assert (recipe["temperature"], recipe["token_head"]) == (0.05, True)
    assert (recipe["visual_learning_rate"], recipe["visual_batch_size"], recipe["visual_max_steps"]) == (3e-6, 768, 1300)
    assert (recipe["topical_learning_rate"], recipe["topical_batch_size"]) == (3e-5, 128)
    assert (recipe["reasoning_learning_rate"], recipe["reasoning_batch_size"], recipe["reasoning_max_steps"]) == (3e-5, 128, 2600)
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
        overrides[f"{stage}_batch_size"] = 16
    result = train_recipe(
        "pixel-linguist",
        tmp_path / "run",
        text_file=small_inputs / "wiki.txt",
        nli_file=small_inputs / "nli.csv",
        sts_dir=small_sts_dir,
        stsb_multi_dir=small_inputs / "stsb_multi",
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
    assert set(result["multilingual_after"]) == {"STSBenchmarkMultilingualSTS-en", "STSBenchmarkMultilingualSTS-de", "avg"}
    assert result["export"] is None
    model = SentenceTransformer(result["model"], trust_remote_code=True)
    embeddings = model.encode(["A man is playing a guitar.", "Ein Mann spielt Gitarre."], convert_to_tensor=True)
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(2))
    assert (tmp_path / "run" / "stages" / "reasoning" / "checkpoints").is_dir()


def test_stages_need_their_data_and_can_be_skipped(tmp_path, small_inputs):
    with pytest.raises(ValueError, match="reasoning stage trains on NLI premise and entailment hypothesis.*pass nli_file"):
        train_recipe(
            "pixel-linguist",
            tmp_path / "no-nli",
            text_file=small_inputs / "wiki.txt",
            tiny=True,
            overrides={"visual_max_steps": 0, "topical_max_steps": 0},
        )
    result = train_recipe(
        "pixel-linguist",
        tmp_path / "nli-only",
        nli_file=small_inputs / "nli.csv",
        tiny=True,
        max_steps=1,
        overrides={"visual_max_steps": 0, "topical_max_steps": 0, "reasoning_batch_size": 8},
    )
    assert [stage["name"] for stage in result["stages"]] == ["reasoning"]
