from __future__ import annotations

import math

import pytest
import torch

from sbert_nonling import DistillAnchorLoss, MultimodalAlignLoss, SimCSELoss
from sbert_nonling.training.loss_state import loss_parameters, loss_state_dict

SENTENCES = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field"]


def count_forwards(module):
    calls = []
    module.register_forward_hook(lambda *args: calls.append(1))
    return calls


def test_teacher_is_a_frozen_sub_module_left_out_of_the_optimizer_and_the_state(tiny_model):
    loss = DistillAnchorLoss(tiny_model)
    assert loss.teacher is not tiny_model and not any(p.requires_grad for p in loss.teacher.parameters())
    assert dict(loss.named_children())["teacher"] is loss.teacher  # moves with the loss to the model's device
    teacher_ids = {id(p) for p in loss.teacher.parameters()}
    assert not teacher_ids & {id(p) for p in loss_parameters(loss, tiny_model)}  # so never optimised
    assert not any(key.startswith("teacher.") for key in loss.state_dict())  # so never checkpointed or saved
    assert not any(key.startswith("teacher.") for key in loss_state_dict(loss, tiny_model))
    torch.testing.assert_close(next(loss.teacher.parameters()), next(tiny_model.parameters()))


def test_anchor_terms_vanish_when_the_student_equals_the_teacher(tiny_model):
    tiny_model.eval()
    loss = DistillAnchorLoss(tiny_model)
    terms = loss([tiny_model.preprocess(SENTENCES)], None)
    assert terms["anchor_kl"].abs() < 1e-6 and terms["anchor_cosine"].abs() < 1e-6


def test_kl_and_cosine_terms_match_hand_computed_values(tiny_model):
    loss = DistillAnchorLoss(tiny_model, temperature=2.0)
    student, teacher = torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    expected = 0.0
    for i in range(2):
        s = [sum(a * b for a, b in zip(student[i].tolist(), student[j].tolist())) / 2.0 for j in range(2)]
        t = [sum(a * b for a, b in zip(teacher[i].tolist(), teacher[j].tolist())) / 2.0 for j in range(2)]
        p_s = [math.exp(v) / sum(math.exp(w) for w in s) for v in s]
        p_t = [math.exp(v) / sum(math.exp(w) for w in t) for v in t]
        expected += sum(pt * math.log(pt / ps) for pt, ps in zip(p_t, p_s))
    assert loss.kl_term(student, teacher).item() == pytest.approx(4.0 * expected / 2, rel=1e-5)
    tokens_s = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])
    tokens_t = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [-5.0, 5.0]]])
    cosine = loss.cosine_term(
        {"token_embeddings": tokens_s, "attention_mask": torch.tensor([[1, 1, 0]])}, {"token_embeddings": tokens_t}
    )
    assert cosine.item() == pytest.approx((0.0 + 1.0) / 2)  # the padded third token is ignored


def test_composed_with_simcse_each_model_runs_once_per_column(tiny_model):
    tiny_model.train()
    simcse = SimCSELoss(tiny_model)
    loss = DistillAnchorLoss(tiny_model, base_loss=simcse)
    student_calls, teacher_calls = count_forwards(tiny_model), count_forwards(loss.teacher)
    features = [tiny_model.preprocess(SENTENCES), tiny_model.preprocess(SENTENCES)]
    terms = loss(features, None)
    assert set(terms) == {"base", "anchor_kl", "anchor_cosine"}
    assert len(student_calls) == 2 and len(teacher_calls) == 2
    before = [p.detach().clone() for p in loss.teacher.parameters()]
    sum(terms.values()).backward()
    assert all(p.grad is None for p in loss.teacher.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, loss.teacher.parameters()))


def test_composed_with_grounding_returns_all_terms(tiny_model):
    grounding = MultimodalAlignLoss(tiny_model, image_dimension=4, direction="symmetric", temperature=0.1)
    loss = DistillAnchorLoss(tiny_model, base_loss=grounding, kl_weight=0.0, cosine_target="sentence_embedding")
    terms = loss([tiny_model.preprocess(SENTENCES)] * 2, torch.randn(3, 4))
    assert set(terms) == {"grounding", "anchor_cosine"}


def test_settings_are_checked(tiny_model):
    with pytest.raises(ValueError, match="temperature=0 must be positive"):
        DistillAnchorLoss(tiny_model, temperature=0)
    with pytest.raises(ValueError, match="not both 0"):
        DistillAnchorLoss(tiny_model, kl_weight=0, cosine_weight=0)
    with pytest.raises(ValueError, match="cosine_target='pooler'"):
        DistillAnchorLoss(tiny_model, cosine_target="pooler")
    assert DistillAnchorLoss(tiny_model).get_config_dict()["kl_weight"] == 5.0
    assert "cui2020macd" in DistillAnchorLoss(tiny_model).citation


class MeanDistanceLoss(torch.nn.Module):
    """A user's loss, unrelated to this package's: pulls the first column's embeddings towards the origin."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sentence_features, labels):
        return self.model(sentence_features[0])["sentence_embedding"].norm(dim=-1).mean()


class SharedMeanDistanceLoss(MeanDistanceLoss):
    """The same loss, computed from the outputs its caller already has."""

    def compute_loss_from_outputs(self, outputs, labels):
        return outputs[0]["sentence_embedding"].norm(dim=-1).mean()


def test_any_base_loss_composes_through_compute_loss_from_outputs_and_the_student_runs_once(tiny_model):
    tiny_model.eval()
    loss = DistillAnchorLoss(
        tiny_model, base_loss=SharedMeanDistanceLoss(tiny_model), cosine_target="sentence_embedding"
    )
    student_calls = count_forwards(tiny_model)
    terms = loss([tiny_model.preprocess(SENTENCES)], None)
    assert len(student_calls) == 1
    expected = tiny_model.encode(SENTENCES, convert_to_tensor=True).norm(dim=-1).mean()
    torch.testing.assert_close(terms["base"], expected, atol=1e-5, rtol=1e-5)


def test_a_base_loss_without_compute_loss_from_outputs_is_refused_at_construction(tiny_model):
    with pytest.raises(ValueError, match=r"MeanDistanceLoss has no compute_loss_from_outputs\(outputs, labels\)"):
        DistillAnchorLoss(tiny_model, base_loss=MeanDistanceLoss(tiny_model))
