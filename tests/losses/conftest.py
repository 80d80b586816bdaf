"""Fixtures of the task-head loss tests: hand-set embeddings and head layers, and the contract every task loss
keeps."""

from __future__ import annotations

import pytest
import torch

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
