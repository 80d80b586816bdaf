"""angular_margin_logits against KDMCSE's released ArcSimilarity / compute_loss (33270bc), run on the same seeded
inputs in float64 (docs/research/kdmcse_dalr.md, section 4: the inputs' construction and the released values)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses.angular_margin import angular_margin_logits

BATCH, WIDTH, MARGIN, TEMPERATURE = 8, 16, 0.15, 0.05


@pytest.fixture
def inputs():
    """The reference inputs: drawn in float32 from seed 0 in this order, then cast to float64."""
    torch.manual_seed(0)
    z1 = torch.randn(BATCH, WIDTH)
    z2 = z1 + 0.5 * torch.randn(BATCH, WIDTH)
    z2[3] = z1[5]  # a duplicate negative: angle 0, below the margin
    p1 = F.normalize(torch.randn(BATCH, WIDTH), dim=-1)
    p2 = F.normalize(p1 + 0.5 * torch.randn(BATCH, WIDTH), dim=-1)
    v = F.normalize(torch.randn(BATCH, WIDTH), dim=-1)
    t = F.normalize(torch.randn(BATCH, WIDTH), dim=-1)
    image = 0.3 * torch.randn(BATCH, WIDTH)
    caption = image + 0.3 * torch.randn(BATCH, WIDTH)
    drawn = {"z1": z1, "z2": z2, "p1": p1, "p2": p2, "v": v, "t": t, "image": image, "caption": caption}
    return {name: tensor.double() for name, tensor in drawn.items()}


def cosines(queries, candidates):
    return F.normalize(queries, dim=-1) @ F.normalize(candidates, dim=-1).T


def cross_entropy(logits):
    return F.cross_entropy(logits, torch.arange(logits.shape[0])).item()


def test_a_constant_margin_on_text_negatives_gives_the_released_loss(inputs):
    logits = angular_margin_logits(cosines(inputs["z1"], inputs["z2"]), MARGIN, TEMPERATURE)
    assert cross_entropy(logits) == pytest.approx(1.22039721, abs=1e-7)
    assert logits[0, 0].item() == pytest.approx(18.44541567, abs=1e-7)  # the positive is unchanged
    assert logits[0, 1].item() == pytest.approx(7.09256764, abs=1e-7)  # a negative moved closer
    assert logits[5, 3].item() == pytest.approx(20.0, abs=1e-7)  # within the margin: unchanged
    plain = cosines(inputs["z1"], inputs["z2"]) / TEMPERATURE
    assert cross_entropy(plain) == pytest.approx(0.87629173, abs=1e-7)


def test_the_adaptive_margin_from_clip_similarities_gives_the_released_cross_modal_terms(inputs):
    images = F.normalize(inputs["image"], dim=-1) @ F.normalize(inputs["image"], dim=-1).T
    captions = F.normalize(inputs["caption"], dim=-1) @ F.normalize(inputs["caption"], dim=-1).T
    image_terms, caption_terms = [], []
    for view in (inputs["p1"], inputs["p2"]):
        image_terms.append(cross_entropy(angular_margin_logits(view @ inputs["v"].T, MARGIN, TEMPERATURE, images)))
        caption_terms.append(cross_entropy(angular_margin_logits(view @ inputs["t"].T, MARGIN, TEMPERATURE, captions)))
    assert sum(image_terms) / 2 == pytest.approx(10.76140239, abs=1e-6)
    assert sum(caption_terms) / 2 == pytest.approx(8.15798906, abs=1e-6)
    constant = [
        cross_entropy(angular_margin_logits(view @ targets.T, MARGIN, TEMPERATURE))
        for targets in (inputs["v"], inputs["t"])
        for view in (inputs["p1"], inputs["p2"])
    ]
    assert sum(constant) / 2 == pytest.approx(18.77569029, abs=1e-6)


def test_negatives_the_teacher_flags_left_out_of_the_softmax_give_the_released_filtered_terms(inputs):
    images = F.normalize(inputs["image"], dim=-1) @ F.normalize(inputs["image"], dim=-1).T
    captions = F.normalize(inputs["caption"], dim=-1) @ F.normalize(inputs["caption"], dim=-1).T
    off_diagonal = ~torch.eye(BATCH, dtype=torch.bool)
    # the released filter: a raw CLIP caption . image (image targets) or image . caption (caption targets) dot product
    # above 0.8 removes that negative
    image_flags = (inputs["caption"] @ inputs["image"].T > 0.8) & off_diagonal
    caption_flags = (inputs["image"] @ inputs["caption"].T > 0.8) & off_diagonal
    assert (int(image_flags.sum()), int(caption_flags.sum())) == (4, 4)
    image_terms, caption_terms = [], []
    for view in (inputs["p1"], inputs["p2"]):
        logits = angular_margin_logits(view @ inputs["v"].T, MARGIN, TEMPERATURE, images)
        image_terms.append(cross_entropy(logits.masked_fill(image_flags, float("-inf"))))
        logits = angular_margin_logits(view @ inputs["t"].T, MARGIN, TEMPERATURE, captions)
        caption_terms.append(cross_entropy(logits.masked_fill(caption_flags, float("-inf"))))
    assert sum(image_terms) / 2 == pytest.approx(10.66018816, abs=1e-6)
    assert sum(caption_terms) / 2 == pytest.approx(8.14208539, abs=1e-6)


def test_it_keeps_the_dtype_and_passes_gradients():
    similarities = torch.rand(4, 4, dtype=torch.float32, requires_grad=True)
    logits = angular_margin_logits(similarities * 0.9, MARGIN, TEMPERATURE)
    F.cross_entropy(logits, torch.arange(4)).backward()
    assert logits.dtype == torch.float32 and similarities.grad is not None and torch.isfinite(similarities.grad).all()
