"""TeacherGuidedAlignLoss (KDMCSE's grounding) against the values of KDMCSE's released compute_loss (33270bc) on
conftest.py's seeded ``kdmcse_inputs``, in float64 (docs/research/kdmcse_dalr.md, section 4), and on a real model."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses import SimCSELoss, TeacherGuidedAlignLoss

TOLERANCE = 1e-6  # float64 against the released float64 values, printed to 8 decimals


def released_terms(loss, inputs):
    """The loss's image and caption terms on the reference projections (p1, p2 against v and t) and CLIP features."""
    margins_image, margins_caption, filter_image, filter_caption = loss.teacher_guidance(
        inputs["image"], inputs["caption"]
    )
    views = (inputs["p1"], inputs["p2"])
    image = sum(loss.grounding_term(view, inputs["v"], margins_image, filter_image) for view in views) / 2
    caption = sum(loss.grounding_term(view, inputs["t"], margins_caption, filter_caption) for view in views) / 2
    return image.item(), caption.item()


def test_the_adaptive_margin_gives_the_released_cross_modal_terms_and_total(tiny_model, kdmcse_inputs):
    loss = TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, margin=0.15, temperature=0.05)
    image, caption = released_terms(loss, kdmcse_inputs)
    assert (image, caption) == pytest.approx((10.76140239, 8.15798906), abs=TOLERANCE)
    text = SimCSELoss(tiny_model, margin=0.15, training_head="none")
    intra = text.compute_loss_from_embeddings([kdmcse_inputs["z1"], kdmcse_inputs["z2"]]).item()
    assert intra == pytest.approx(1.22039721, abs=TOLERANCE)
    assert intra + 0.01 * (image + caption) == pytest.approx(1.40959113, abs=TOLERANCE)


def test_a_constant_margin_gives_the_released_terms_without_soft_labels(tiny_model, kdmcse_inputs):
    loss = TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, adaptive_margin=False)
    assert sum(released_terms(loss, kdmcse_inputs)) == pytest.approx(18.77569029, abs=TOLERANCE)


def test_the_released_dot_product_filter_gives_the_released_filtered_total(tiny_model, kdmcse_inputs):
    loss = TeacherGuidedAlignLoss(
        tiny_model, clip_dimension=16, filter_threshold=0.8, filter_scores="released_dot_product"
    )
    image, caption = released_terms(loss, kdmcse_inputs)
    assert (image, caption) == pytest.approx((10.66018816, 8.14208539), abs=TOLERANCE)
    assert 1.22039721 + 0.01 * (image + caption) == pytest.approx(1.40841995, abs=TOLERANCE)


def test_the_cosine_filter_drops_the_negatives_clip_finds_too_close(tiny_model, kdmcse_inputs):
    images, captions = kdmcse_inputs["image"], kdmcse_inputs["caption"]
    loss = TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, filter_threshold=0.5, filter_scores="cosine")
    _, _, dropped_images, dropped_captions = loss.teacher_guidance(images, captions)
    cosines = F.normalize(captions, dim=-1) @ F.normalize(images, dim=-1).T
    off_diagonal = ~torch.eye(8, dtype=torch.bool)
    assert torch.equal(dropped_images, (cosines > 0.5) & off_diagonal)
    assert torch.equal(dropped_captions, (cosines.T > 0.5) & off_diagonal)
    assert 0 < int(dropped_images.sum()) < 56 and not dropped_images.diagonal().any()


def test_it_trains_the_model_and_its_heads_through_the_text_and_both_targets(tiny_model):
    captions = ["a man plays a guitar", "a woman slices an onion", "two dogs run", "a cat sleeps"]
    loss = TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, text_loss=SimCSELoss(tiny_model, margin=0.15))
    features = [tiny_model.tokenize(captions), tiny_model.tokenize(captions)]
    clip = torch.randn(4, 2, 16, generator=torch.Generator().manual_seed(0))
    terms = loss(features, clip)
    assert set(terms) == {"simcse", "grounding_image", "grounding_caption"}
    sum(terms.values()).backward()
    for module in (tiny_model, loss.text_head, loss.image_head, loss.caption_head):
        assert any(parameter.grad is not None and parameter.grad.abs().sum() > 0 for parameter in module.parameters())


@pytest.mark.parametrize("shape", [(4, 16), (4, 2, 8), (3, 2, 16)])
def test_clip_features_of_the_wrong_shape_are_named(tiny_model, shape):
    captions = ["a man plays a guitar", "a woman slices an onion", "two dogs run", "a cat sleeps"]
    loss = TeacherGuidedAlignLoss(tiny_model, clip_dimension=16)
    features = [tiny_model.tokenize(captions), tiny_model.tokenize(captions)]
    with pytest.raises(ValueError, match=r"expects CLIP embeddings of shape \(4, 2, 16\)"):
        loss(features, torch.zeros(shape))


def test_bad_settings_are_refused(tiny_model):
    with pytest.raises(ValueError, match="filter_scores"):
        TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, filter_scores="euclidean")
    with pytest.raises(ValueError, match="margin"):
        TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, margin=-0.1)
    with pytest.raises(ValueError, match=r"filter_threshold=5.0 must lie in \[-1, 1\] with filter_scores='cosine'"):
        TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, filter_threshold=5.0)
    TeacherGuidedAlignLoss(tiny_model, clip_dimension=16, filter_threshold=5.0, filter_scores="released_dot_product")


def test_a_model_that_does_not_pool_cls_trains_with_a_warning_naming_its_pooling(tiny_encoder_dir, caplog):
    from sbert_nonling.models import build_sentence_model

    mean_pooled = build_sentence_model(tiny_encoder_dir, pooling="mean", max_seq_length=32)
    with caplog.at_level("WARNING", logger="sbert_nonling.losses.teacher_guided_align"):
        TeacherGuidedAlignLoss(mean_pooled, clip_dimension=16)
    assert "the model pools 'mean'; KDMCSE is defined on the [CLS] embedding" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="sbert_nonling.losses.teacher_guided_align"):
        TeacherGuidedAlignLoss(build_sentence_model(tiny_encoder_dir, pooling="cls"), clip_dimension=16)
    assert caplog.text == ""
