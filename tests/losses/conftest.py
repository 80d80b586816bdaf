"""Fixtures of the loss tests: hand-set embeddings and head layers, the contract every task loss keeps, the seeded
inputs the released KDMCSE code was run on, and a tiny frozen text teacher."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses.head_layer import HeadLayer

SENTENCES = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field"]
OTHER_SENTENCES = ["a man plays music", "a woman cuts an onion", "a cat sleeps"]


@pytest.fixture
def padded():
    """``padded(*rows, dim=32)``: rows of a (len(rows), dim) tensor with the given leading values and zeros after."""

    def make(*rows, dim=32):
        out = torch.zeros(len(rows), dim)
        for index, row in enumerate(rows):
            out[index, : len(row)] = torch.tensor(row, dtype=torch.float)
        return out

    return make


@pytest.fixture
def identity_head():
    """A HeadLayer(32 -> 2) passing the first two embedding values through (then ReLU), without dropout."""
    layer = HeadLayer(32, 2, dropout=0.0)
    with torch.no_grad():
        layer.linear.weight.zero_()
        layer.linear.weight[:, :2] = torch.eye(2)
        layer.linear.bias.zero_()
    return layer


@pytest.fixture
def check_task_loss_contract(tiny_model):
    """``check(loss, columns, labels)``: on real model features the loss is a positive finite scalar with a gradient
    reaching its head layer, and the head is never part of the model."""

    def check(loss, columns: int, labels: torch.Tensor) -> None:
        tiny_model.train()
        features = [tiny_model.preprocess(sentences) for sentences in (SENTENCES, OTHER_SENTENCES)[:columns]]
        value = loss(features, labels)
        assert value.ndim == 0 and torch.isfinite(value) and value.requires_grad and value > 0
        value.backward()
        assert loss.head_layer.linear.weight.grad is not None
        head = {id(parameter) for parameter in loss.head_layer.parameters()}
        assert not head & {id(parameter) for parameter in tiny_model.parameters()}
        assert not any("head_layer" in key or "classifier" in key for key in tiny_model.state_dict())

    return check


@pytest.fixture
def kdmcse_inputs():
    """KDMCSE's reference inputs (docs/research/kdmcse_dalr.md, section 4.2): drawn in float32 from seed 0 in this
    order, then cast to float64."""
    torch.manual_seed(0)
    z1 = torch.randn(8, 16)
    z2 = z1 + 0.5 * torch.randn(8, 16)
    z2[3] = z1[5]  # a duplicate negative: angle 0, below the margin
    p1 = F.normalize(torch.randn(8, 16), dim=-1)
    p2 = F.normalize(p1 + 0.5 * torch.randn(8, 16), dim=-1)
    v = F.normalize(torch.randn(8, 16), dim=-1)
    t = F.normalize(torch.randn(8, 16), dim=-1)
    image = 0.3 * torch.randn(8, 16)
    caption = image + 0.3 * torch.randn(8, 16)
    drawn = {"z1": z1, "z2": z2, "p1": p1, "p2": p2, "v": v, "t": t, "image": image, "caption": caption}
    return {name: tensor.double() for name, tensor in drawn.items()}


@pytest.fixture(scope="session")
def tiny_teacher_dir(tmp_path_factory, wiki_sentences) -> str:
    """A second tiny encoder with the student's vocabulary and other random weights: the frozen text teacher."""
    from sbert_nonling.models import build_tiny_encoder

    folder = tmp_path_factory.mktemp("tiny-teacher")
    return str(build_tiny_encoder(folder, wiki_sentences, vocab_size=2000, hidden_size=32, seed=7))


@pytest.fixture
def tiny_teacher(tiny_teacher_dir):
    from sbert_nonling.models import build_sentence_model

    return build_sentence_model(tiny_teacher_dir, pooling="cls", max_seq_length=32)


@pytest.fixture
def two_step_arguments(tmp_path):
    """sentence-transformers' training arguments of a 2-step run at batch 8 that saves nothing."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    return SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        save_strategy="no",
        report_to="none",
    )
