"""build_grounding: MCSE / MACD pieces; extracted image features travel in the plan (the runner writes them), the
held-out retrieval is a plan evaluation, MACD's position embeddings stay frozen through a run of its stage."""

from __future__ import annotations

import pytest
import torch

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.data.image_features import load_image_features, save_image_features
from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
from sbert_nonling.methods import build_grounding


def test_mcse_extracts_features_into_the_plan_and_holds_images_out(tmp_path, monkeypatch, data_dir, flickr_subset):
    text_file = tmp_path / "wiki.txt"
    text_file.write_text(
        "\n".join(
            (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:32]
        )
        + "\n"
    )
    names = sorted(path.name for path in (flickr_subset / "images").iterdir())
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(names[:3]) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    config = load_recipe("mcse", tiny=True, overrides={"batch_size": 6, "max_steps": 2})
    plan = build_grounding(
        config,
        DataSources(
            captions_file=flickr_subset / "captions.txt",
            image_dir=flickr_subset / "images",
            heldout_images_file=heldout,
            text_file=text_file,
        ),
    )
    assert list(work.iterdir()) == []  # the extracted features are in the plan, not on disk
    (stage,) = plan.stages
    assert (
        list(stage.train_dataset) == ["text", "captions"] and len(stage.train_dataset["captions"]) == 9
    )  # one caption per training image
    assert (
        isinstance(stage.loss["captions"], MultimodalAlignLoss)
        and stage.loss["captions"].text_loss is stage.loss["text"]
    )
    assert stage.args.multi_dataset_batch_sampler.__name__ == "InterleavedBatchSampler"
    save_image_features(tmp_path / "features.safetensors", *plan.extracted_features)
    saved_names, features = load_image_features(tmp_path / "features.safetensors")
    assert saved_names == names and features["global"].shape == (12, config.image_dimension)
    stage.trainer(plan.model, plan.evaluator).train()
    retrieval = plan.evaluations["retrieval"](plan.model)
    assert set(retrieval) == {"text_to_image_R@1", "text_to_image_R@5", "image_to_text_R@1", "image_to_text_R@5"}
    assert retrieval["text_to_image_R@5"] == 100.0  # 3 held-out images: every caption's image is in the top 5


def test_macd_anchors_captions_only_and_keeps_positions_frozen(tmp_path, monkeypatch, flickr_subset):
    monkeypatch.chdir(tmp_path)
    config = load_recipe("macd", tiny=True, overrides={"batch_size": 6, "max_steps": 2})
    plan = build_grounding(
        config,
        DataSources(
            captions_file=flickr_subset / "captions.txt",
            image_dir=flickr_subset / "images",
            image_features=flickr_subset / "features.safetensors",
        ),
    )
    assert plan.extracted_features is None and plan.evaluations["retrieval"](plan.model) == {}
    (stage,) = plan.stages
    assert isinstance(stage.loss, DistillAnchorLoss) and stage.train_dataset.column_names == [
        "anchor",
        "positive",
        "label",
    ]
    assert (
        stage.args.warmup_steps == config.warmup_steps == 0.1
        and stage.args.gradient_accumulation_steps == config.gradient_accumulation_steps
    )
    position = plan.model[0].encoder.auto_model.embeddings.position_embeddings.weight
    initial = position.detach().clone()
    trainer = stage.trainer(plan.model)
    trainer.train()
    assert set(trainer.step_counts) == {"captions"}  # its one dataset's name, as the text + captions runs report both
    assert not position.requires_grad
    torch.testing.assert_close(position, initial)


def test_missing_captions_and_feature_mismatch(flickr_subset):
    with pytest.raises(ValueError, match="Recipe 'macd' grounds captions in their images: pass captions_file"):
        build_grounding(load_recipe("macd", tiny=True), DataSources())
    with pytest.raises(ValueError, match="recipe 'macd' expects image_dimension=2048"):
        build_grounding(
            load_recipe("macd", tiny=True, overrides={"image_dimension": 2048}),
            DataSources(
                captions_file=flickr_subset / "captions.txt",
                image_dir=flickr_subset / "images",
                image_features=flickr_subset / "features.safetensors",
            ),
        )
