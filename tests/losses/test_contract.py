"""The contract every loss of the package keeps, as sentence-transformers' own loss tests check theirs: its settings
survive a round trip through ``get_config_dict``, it cites its paper, it stays finite under bfloat16 autocast on the
CPU, its gradient reaches the model, it never calls ``Tensor.to_dense()``, and the model's card names it."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from typing import Any

import pytest
import torch
from sentence_transformers.base.model_card import generate_model_card

import sbert_nonling.losses as losses
from sbert_nonling.losses import (
    CachedUnpairedModalityContrastiveLoss,
    DALRLoss,
    DAMSMLoss,
    DistillAnchorLoss,
    ListwiseDistillationLoss,
    MultimodalAlignLoss,
    PairClassificationLoss,
    SentenceClassificationLoss,
    SimCSELoss,
    STSRegressionLoss,
    SymmetricInfoNCE,
    TeacherGuidedAlignLoss,
    UnpairedModalityContrastiveLoss,
)

SENTENCES = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field", "a cat sleeps on a mat"]
OTHER_SENTENCES = ["a man plays music", "a woman cuts an onion", "dogs run", "a cat sleeps"]
CLASSES = torch.tensor([0, 1, 2, 1])


def regions(count: int) -> torch.Tensor:
    """Frozen image features of the 4 captions: ``count`` regions of dimension 16 each."""
    return torch.randn(4, count, 16, generator=torch.Generator().manual_seed(2))


#: A loss's case: the keyword arguments that are objects or fixed by the data, not settings (the settings come back
#: from get_config_dict), the loss's columns of sentences and its labels.
Case = tuple[dict[str, Any], list[list[str]], Any]


def cases(model) -> dict[type, Case]:
    """The case of every loss of the package, on ``model``."""
    pairs = [SENTENCES, OTHER_SENTENCES]
    return {
        SimCSELoss: ({}, [SENTENCES, SENTENCES], None),
        UnpairedModalityContrastiveLoss: ({}, pairs, CLASSES),
        CachedUnpairedModalityContrastiveLoss: ({}, pairs, CLASSES),
        SymmetricInfoNCE: ({}, pairs, None),
        MultimodalAlignLoss: (
            {"image_dimension": 16, "text_loss": SimCSELoss(model), "local_weight": 1.0},
            [SENTENCES, SENTENCES],
            regions(9),
        ),
        TeacherGuidedAlignLoss: (
            {"clip_dimension": 16, "text_loss": SimCSELoss(model, margin=0.15), "filter_threshold": 0.5},
            [SENTENCES, SENTENCES],
            torch.randn(4, 2, 16, generator=torch.Generator().manual_seed(3)),
        ),
        DAMSMLoss: ({"image_dimension": 16, "projection_dimension": 8}, [SENTENCES], regions(9)),
        DistillAnchorLoss: ({"base_loss": SimCSELoss(model)}, [SENTENCES, SENTENCES], None),
        ListwiseDistillationLoss: ({"teachers": copy.deepcopy(model)}, [SENTENCES, SENTENCES], None),
        DALRLoss: (
            {
                "ranking_loss": ListwiseDistillationLoss(model, copy.deepcopy(model), text_loss=SimCSELoss(model)),
                "clip_dimension": 32,
            },
            [SENTENCES, SENTENCES],
            torch.randn(4, 2, 32, generator=torch.Generator().manual_seed(3)),
        ),
        SentenceClassificationLoss: ({"num_labels": 3, "hidden_dimension": 16}, [SENTENCES], CLASSES),
        PairClassificationLoss: ({"num_labels": 3, "hidden_dimension": 16}, pairs, CLASSES),
        STSRegressionLoss: ({"hidden_dimension": 16}, pairs, torch.tensor([0.9, 0.8, 0.1, 0.3])),
    }


LOSSES = [getattr(losses, name) for name in losses.__all__ if name != "HeadLayer"]
#: Config entries that name an object rather than hold a setting (the task losses' loss function, by class name).
NAMED_OBJECTS = {"loss_fct"}
#: Constructor parameters that are objects or display options, not settings: the card does not record them.
NOT_SETTINGS = {"teacher", "head_layer", "loss_fct", "show_progress_bar"}


def test_every_loss_of_the_package_has_a_contract_case(tiny_model):
    assert set(cases(tiny_model)) == set(LOSSES)


@pytest.fixture
def mean_model(tiny_encoder_dir):
    """The tiny encoder with mean pooling, so that its sentences' embeddings differ."""
    from sbert_nonling.models import build_sentence_model

    return build_sentence_model(tiny_encoder_dir, pooling="mean", max_seq_length=32)


def build(loss_class: type, model) -> tuple[torch.nn.Module, dict[str, Any], list[list[str]], Any]:
    torch.manual_seed(0)
    objects, columns, labels = cases(model)[loss_class]
    return loss_class(model, **objects), objects, columns, labels


def total(value) -> torch.Tensor:
    return sum(value.values()) if isinstance(value, dict) else value


def named_parameters(loss_class: type) -> set[str]:
    """The named constructor parameters of ``loss_class``, and those of the class it extends where it passes
    ``**kwargs`` on (the cached loss takes the plain loss's settings)."""
    names: set[str] = set()
    for cls in loss_class.__mro__:
        parameters = inspect.signature(cls.__init__).parameters.values()
        names |= {item.name for item in parameters if item.kind not in (item.VAR_POSITIONAL, item.VAR_KEYWORD)}
        if all(item.kind != item.VAR_KEYWORD for item in parameters):
            break
    return names - {"self"}


def setting_value(parameter: inspect.Parameter, value: Any) -> Any:
    """A config entry as the constructor takes it: a group of settings (a dataclass, e.g. DALRLoss's ``consistency``)
    is recorded as a dict and rebuilt from it."""
    default = parameter.default
    return type(default)(**value) if dataclasses.is_dataclass(default) else value


@pytest.mark.parametrize("loss_class", LOSSES, ids=[loss.__name__ for loss in LOSSES])
def test_every_setting_is_in_the_config_and_survives_a_round_trip_and_the_loss_cites_its_paper(loss_class, mean_model):
    loss, objects, _, _ = build(loss_class, mean_model)
    config = loss.get_config_dict()
    json.dumps(config)  # the card writes it as text
    parameters = inspect.signature(loss_class).parameters
    unrecorded = named_parameters(loss_class) - {"model", *objects, *config, *NOT_SETTINGS}
    assert not unrecorded, f"{loss_class.__name__}.get_config_dict() leaves out {sorted(unrecorded)}"
    settings = {
        key: setting_value(parameters[key], value)
        for key, value in config.items()
        if key in parameters and key not in {*objects, *NAMED_OBJECTS}
    }
    rebuilt = loss_class(mean_model, **{**objects, **settings})
    assert rebuilt.get_config_dict() == config
    assert loss.citation.lstrip().startswith("@") and loss.citation.count("@") >= 1


@pytest.mark.parametrize("loss_class", LOSSES, ids=[loss.__name__ for loss in LOSSES])
def test_a_step_under_bfloat16_autocast_is_finite_and_its_gradient_reaches_the_model(loss_class, mean_model):
    loss, _, columns, labels = build(loss_class, mean_model)
    if isinstance(loss, DistillAnchorLoss):  # the student moved away from its teacher: both anchor terms count
        with torch.no_grad():
            for parameter in mean_model.parameters():
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    features = [mean_model.preprocess(sentences) for sentences in columns]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        value = total(loss(features, labels))
    assert value.ndim == 0 and value.dtype == torch.float32 and torch.isfinite(value)
    value.backward()
    gradients = [parameter.grad for parameter in mean_model.parameters() if parameter.grad is not None]
    assert gradients and all(torch.isfinite(grad).all() for grad in gradients)
    assert any(grad.abs().sum() > 0 for grad in gradients)


@pytest.mark.parametrize("loss_class", LOSSES, ids=[loss.__name__ for loss in LOSSES])
def test_a_step_never_calls_tensor_to_dense(loss_class, mean_model, monkeypatch):
    """A compiled graph drops the gradient of ``Tensor.to_dense()`` on torch 2.11 / 2.12 (sentence-transformers'
    ``cos_sim`` ends in it): no loss may call it, forward or backward, so that a compiled loss trains on every torch
    the package declares."""

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{loss_class.__name__} called Tensor.to_dense()")

    loss, _, columns, labels = build(loss_class, mean_model)
    features = [mean_model.preprocess(sentences) for sentences in columns]
    monkeypatch.setattr(torch.Tensor, "to_dense", refuse)
    total(loss(features, labels)).backward()


@pytest.mark.parametrize("loss_class", LOSSES, ids=[loss.__name__ for loss in LOSSES])
def test_the_model_card_names_the_loss_and_its_citation(loss_class, mean_model):
    loss, _, _, _ = build(loss_class, mean_model)
    mean_model.model_card_data.set_losses([loss])
    card = generate_model_card(mean_model)
    assert f"loss:{loss_class.__name__}" in card
    first_entry = loss.citation.strip().splitlines()[0]  # e.g. "@inproceedings{gao2021simcse,"
    assert first_entry in card
