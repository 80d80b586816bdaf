"""angular_margin_logits against KDMCSE's released ArcSimilarity / compute_loss (33270bc), run on the same seeded
inputs in float64 (conftest.py's ``kdmcse_inputs``; docs/research/kdmcse_dalr.md, section 4: the inputs' construction
and the released values)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses.angular_margin import angular_margin_logits

BATCH, MARGIN, TEMPERATURE = 8, 0.15, 0.05


def cosines(queries, candidates):
    return F.normalize(queries, dim=-1) @ F.normalize(candidates, dim=-1).T


def cross_entropy(logits):
    return F.cross_entropy(logits, torch.arange(logits.shape[0])).item()


def test_a_constant_margin_on_text_negatives_gives_the_released_loss(kdmcse_inputs):
    logits = angular_margin_logits(cosines(kdmcse_inputs["z1"], kdmcse_inputs["z2"]), MARGIN, TEMPERATURE)
    assert cross_entropy(logits) == pytest.approx(1.22039721, abs=1e-7)
    assert logits[0, 0].item() == pytest.approx(18.44541567, abs=1e-7)  # the positive is unchanged
    assert logits[0, 1].item() == pytest.approx(7.09256764, abs=1e-7)  # a negative moved closer
    assert logits[5, 3].item() == pytest.approx(20.0, abs=1e-7)  # within the margin: unchanged
    plain = cosines(kdmcse_inputs["z1"], kdmcse_inputs["z2"]) / TEMPERATURE
    assert cross_entropy(plain) == pytest.approx(0.87629173, abs=1e-7)


def test_the_adaptive_margin_from_clip_similarities_gives_the_released_cross_modal_terms(kdmcse_inputs):
    images = F.normalize(kdmcse_inputs["image"], dim=-1) @ F.normalize(kdmcse_inputs["image"], dim=-1).T
    captions = F.normalize(kdmcse_inputs["caption"], dim=-1) @ F.normalize(kdmcse_inputs["caption"], dim=-1).T
    image_terms, caption_terms = [], []
    for view in (kdmcse_inputs["p1"], kdmcse_inputs["p2"]):
        image_terms.append(
            cross_entropy(angular_margin_logits(view @ kdmcse_inputs["v"].T, MARGIN, TEMPERATURE, images))
        )
        caption_terms.append(
            cross_entropy(angular_margin_logits(view @ kdmcse_inputs["t"].T, MARGIN, TEMPERATURE, captions))
        )
    assert sum(image_terms) / 2 == pytest.approx(10.76140239, abs=1e-6)
    assert sum(caption_terms) / 2 == pytest.approx(8.15798906, abs=1e-6)
    constant = [
        cross_entropy(angular_margin_logits(view @ targets.T, MARGIN, TEMPERATURE))
        for targets in (kdmcse_inputs["v"], kdmcse_inputs["t"])
        for view in (kdmcse_inputs["p1"], kdmcse_inputs["p2"])
    ]
    assert sum(constant) / 2 == pytest.approx(18.77569029, abs=1e-6)


def test_negatives_the_teacher_flags_left_out_of_the_softmax_give_the_released_filtered_terms(kdmcse_inputs):
    images = F.normalize(kdmcse_inputs["image"], dim=-1) @ F.normalize(kdmcse_inputs["image"], dim=-1).T
    captions = F.normalize(kdmcse_inputs["caption"], dim=-1) @ F.normalize(kdmcse_inputs["caption"], dim=-1).T
    off_diagonal = ~torch.eye(BATCH, dtype=torch.bool)
    # the released filter: a raw CLIP caption . image (image targets) or image . caption (caption targets) dot product
    # above 0.8 removes that negative
    image_flags = (kdmcse_inputs["caption"] @ kdmcse_inputs["image"].T > 0.8) & off_diagonal
    caption_flags = (kdmcse_inputs["image"] @ kdmcse_inputs["caption"].T > 0.8) & off_diagonal
    assert (int(image_flags.sum()), int(caption_flags.sum())) == (4, 4)
    image_terms, caption_terms = [], []
    for view in (kdmcse_inputs["p1"], kdmcse_inputs["p2"]):
        logits = angular_margin_logits(view @ kdmcse_inputs["v"].T, MARGIN, TEMPERATURE, images)
        image_terms.append(cross_entropy(logits.masked_fill(image_flags, float("-inf"))))
        logits = angular_margin_logits(view @ kdmcse_inputs["t"].T, MARGIN, TEMPERATURE, captions)
        caption_terms.append(cross_entropy(logits.masked_fill(caption_flags, float("-inf"))))
    assert sum(image_terms) / 2 == pytest.approx(10.66018816, abs=1e-6)
    assert sum(caption_terms) / 2 == pytest.approx(8.14208539, abs=1e-6)


def test_it_keeps_the_dtype_and_passes_gradients():
    similarities = torch.rand(4, 4, dtype=torch.float32, requires_grad=True)
    logits = angular_margin_logits(similarities * 0.9, MARGIN, TEMPERATURE)
    F.cross_entropy(logits, torch.arange(4)).backward()
    assert logits.dtype == torch.float32 and similarities.grad is not None and torch.isfinite(similarities.grad).all()


def test_a_similarity_of_exactly_one_keeps_the_gradient_of_its_logit():
    """Two identical views give a positive of similarity exactly 1, where acos's slope is infinite: the unchanged
    logits never go through it (torch 2.11's clamp passed that slope on, a NaN gradient)."""
    similarities = torch.tensor([[1.0, 0.2, 0.99999], [0.2, 1.0, -0.3], [0.5, -0.3, 1.0]], requires_grad=True)
    logits = angular_margin_logits(similarities, MARGIN, TEMPERATURE)
    logits.sum().backward()
    assert torch.isfinite(similarities.grad).all()
    # the positives, and [0, 2]: within the margin
    unchanged = torch.tensor([[True, False, True], [False, True, False], [False, False, True]])
    torch.testing.assert_close(similarities.grad[unchanged], torch.full((4,), 1 / TEMPERATURE))
