"""UnpairedModalityTrainer: the alternating scheme's per-dataset optimizers and rates, the joint scheme's weighted
sum."""

from __future__ import annotations

import pytest
import torch
from datasets import DatasetDict
from sentence_transformers import SentenceTransformerTrainingArguments

from sbert_nonling import ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss
from sbert_nonling.data import image_folder_dataset, sentence_pairs_dataset
from sbert_nonling.models import build_sentence_model
from sbert_nonling.training import ModalityOptimizer, UnpairedModalityTrainer


@pytest.fixture
def setup(tiny_encoder_dir, data_dir, wiki_sentences, tmp_path):
    model = build_sentence_model(
        tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(img_size=16, patch_size=8, embedding_dimension=32)}
    )
    images, _ = image_folder_dataset(data_dir / "images" / "cifar10" / "train", img_size=16, limit_per_class=3)
    datasets = DatasetDict({"image": images, "text": sentence_pairs_dataset(wiki_sentences[:64])})
    losses = {"image": UnpairedModalityContrastiveLoss(model, "supcon"), "text": SimCSELoss(model)}

    def make(scheme="alternating", accumulation=1, image_loss=None, **kwargs):
        if image_loss is not None:
            losses["image"] = image_loss
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / scheme),
            max_steps=2,
            per_device_train_batch_size=16,
            learning_rate=1e-2,
            gradient_accumulation_steps=accumulation,
            lr_scheduler_type="constant",
            weight_decay=0.0,
            max_grad_norm=1e9,
            save_strategy="no",
            report_to="none",
            seed=7,
        )
        return UnpairedModalityTrainer(
            model=model,
            args=args,
            train_dataset=datasets,
            loss=losses,
            scheme=scheme,
            batch_sizes={"image": 8},
            **kwargs,
        )

    return model, make


def test_alternating_steps_use_each_modality_s_own_optimizer_and_rate(setup):
    model, make = setup
    trainer = make(learning_rates={"image": 1e-6})
    weight = model[0].encoder.auto_model.encoder.layer[0].attention.self.query.weight
    start = weight.detach().clone()
    trainer.args.max_steps = 1  # the first batch is an image batch
    trainer.train()
    optimizer = trainer.modality_optimizer
    assert isinstance(optimizer, ModalityOptimizer) and set(optimizer.optimizers) == {"image", "text"}
    image_state, text_state = optimizer.optimizers["image"].state, optimizer.optimizers["text"].state
    assert weight in image_state and weight not in text_state
    moved = (weight.detach() - start).abs().max().item()
    assert 0.5e-6 < moved < 1.5e-6  # Adam's first step moves by ~lr: the image rate, not the text one (1e-2)
    assert all(group["lr"] == 1e-6 for group in optimizer.optimizers["image"].param_groups)
    assert all(group["lr"] == 1e-2 for group in optimizer.optimizers["text"].param_groups)


def test_alternating_keeps_separate_adam_moments(setup):
    model, make = setup
    trainer = make(learning_rates={"image": 1e-6})
    trainer.train()  # one image step, one text step
    weight = model[0].encoder.auto_model.encoder.layer[0].attention.self.query.weight
    image_moment = trainer.modality_optimizer.optimizers["image"].state[weight]["exp_avg"]
    text_moment = trainer.modality_optimizer.optimizers["text"].state[weight]["exp_avg"]
    assert image_moment is not text_moment and not torch.allclose(image_moment, text_moment)
    head = trainer.loss["text"].head[0].weight
    assert (
        head in trainer.modality_optimizer.optimizers["text"].state
        and head not in trainer.modality_optimizer.optimizers["image"].state
    )
    state = trainer.modality_optimizer.state_dict()
    assert set(state) == {"image", "text"}
    trainer.modality_optimizer.load_state_dict(state)
    active = trainer.modality_optimizer.active
    assert trainer.modality_optimizer.param_groups[0] is trainer.modality_optimizer.optimizers[active].param_groups[0]


def test_alternating_applies_learning_rate_mapping_in_every_dataset_s_optimizer(setup):
    model, make = setup
    trainer = make(learning_rates={"image": 1e-3})
    trainer.args.learning_rate_mapping = {
        r"encoder\.layer\.0\.": 0.0,
        r"^text\.head\.": 5e-3,
    }  # layer 0 frozen, head slower
    layers = model[0].encoder.auto_model.encoder.layer
    frozen, trained = layers[0].attention.self.query.weight, layers[1].attention.self.query.weight
    starts = frozen.detach().clone(), trained.detach().clone()
    trainer.train()  # one image step (image AdamW), one text step (text AdamW)
    assert torch.equal(frozen.detach(), starts[0]) and not torch.equal(trained.detach(), starts[1])
    optimizers = trainer.modality_optimizer.optimizers
    rate_of = {
        name: {id(p): group["lr"] for group in optimizer.param_groups for p in group["params"]}
        for name, optimizer in optimizers.items()
    }
    head = trainer.loss["text"].head[0].weight
    assert rate_of["image"][id(frozen)] == rate_of["text"][id(frozen)] == 0.0
    assert (
        rate_of["image"][id(trained)] == 1e-3 and rate_of["text"][id(trained)] == 1e-2
    )  # unmapped: each dataset's rate
    assert rate_of["text"][id(head)] == 5e-3 and id(head) not in rate_of["image"]


def test_joint_scheme_sums_weighted_losses_in_one_optimizer(setup):
    model, make = setup
    trainer = make("joint", accumulation=2, weights={"image": 0.05})
    assert trainer.modality_optimizer is None
    batch = next(iter(trainer.get_train_dataloader()))
    assert batch["dataset_name"] == "image"
    model.eval()  # no dropout: the weighted and unweighted losses see the same embeddings
    weighted = trainer.compute_loss(model, dict(batch))
    features, labels = trainer.collect_features({key: value for key, value in batch.items() if key != "dataset_name"})
    plain = trainer.loss["image"](features, labels)
    torch.testing.assert_close(weighted, 0.05 * plain)
    model.train()
    trainer.train()
    assert not isinstance(trainer.optimizer.optimizer, ModalityOptimizer)


def test_scheme_settings_are_checked(setup):
    _, make = setup
    with pytest.raises(ValueError, match="needs gradient_accumulation_steps=2"):
        make("joint", accumulation=1)
    with pytest.raises(ValueError, match="needs gradient_accumulation_steps=1"):
        make("alternating", accumulation=2)
    with pytest.raises(ValueError, match="learning_rates keys must be modality dataset names"):
        make(learning_rates={"audio": 1e-6})
    with pytest.raises(ValueError, match="scheme='sum' must be"):
        make("sum")


def gradients_of(trainer, model, batch, scaler=None) -> dict[str, torch.Tensor]:
    """The gradients of one training batch through ``trainer.compute_loss`` (dropout seeded the same every time),
    scaled by ``scaler`` and unscaled through the trainer's optimizer as accelerate does before clipping."""
    optimizer = trainer.create_optimizer()
    optimizer.zero_grad()
    torch.manual_seed(0)
    loss = trainer.compute_loss(model, dict(batch))
    (loss if scaler is None else scaler.scale(loss)).backward()
    if scaler is not None:
        scaler.unscale_(optimizer)
    parameters = [
        *model.named_parameters(),
        *(("loss." + name, p) for name, p in trainer.loss[batch["dataset_name"]].named_parameters()),
    ]
    return {name: parameter.grad.clone() for name, parameter in parameters if parameter.grad is not None}


@pytest.mark.parametrize("scheme", ["alternating", "joint", "alternating with GradCache"])
def test_fp16_loss_scaling_unscales_every_gradient_once(setup, scheme):
    """GradScaler.unscale_ on the trainer's optimizer (what accelerate calls before gradient clipping under fp16) gives
    the fp32 gradients: of the shared encoder in both schemes and through GradCache's mini-batches, and of the losses'
    own heads. Under the alternating scheme the shared parameters were once listed by every dataset's optimizer and
    divided by the scale twice."""
    from sbert_nonling import CachedUnpairedModalityContrastiveLoss

    model, make = setup
    cached = (
        CachedUnpairedModalityContrastiveLoss(model, "supcon", mini_batch_size=3) if "GradCache" in scheme else None
    )
    trainer = make(scheme.split()[0], accumulation=1 if scheme.startswith("alternating") else 2, image_loss=cached)
    batches = iter(trainer.get_train_dataloader())
    for batch in (next(batches), next(batches)):  # an image batch, then a text batch (SimCSE's MLP head)
        reference = gradients_of(trainer, model, batch)
        scaled = gradients_of(trainer, model, batch, torch.amp.GradScaler("cpu", init_scale=1024.0))
        assert scaled.keys() == reference.keys() and len(reference) > 10
        for name, gradient in reference.items():
            torch.testing.assert_close(
                scaled[name], gradient, rtol=1e-6, atol=0, msg=f"{batch['dataset_name']}: {name}"
            )
    assert any(name.startswith("loss.head") for name in scaled)


def test_logs_name_each_dataset_s_loss_and_each_optimizer_s_rate(setup):
    """``loss`` mixes image and text batches and ``learning_rate`` is one number: the logs also name each."""
    _, make = setup
    trainer = make(learning_rates={"image": 1e-6})
    trainer.args.max_steps, trainer.args.logging_steps, trainer.args.lr_scheduler_type = 4, 2, "linear"
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2
    for entry in logged:  # a decaying schedule: the rates of the same step
        assert entry["learning_rate"] == entry["learning_rate_text"] and entry["learning_rate_image"] == pytest.approx(
            entry["learning_rate"] * 1e-4
        )
        assert entry["loss_image"] > 0 and entry["loss_text"] > 0 and entry["loss_image"] != entry["loss_text"]
