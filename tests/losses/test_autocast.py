"""Every loss under torch.autocast (CPU; bfloat16 and float16): the loss math runs in float32, and a training step of a
tiny real model gives a finite loss and finite gradients, close to the float32 step."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling import (
    CachedUnpairedModalityContrastiveLoss,
    DALRLoss,
    DistillAnchorLoss,
    ListwiseDistillationLoss,
    MultimodalAlignLoss,
    SimCSELoss,
    SymmetricInfoNCE,
    TeacherGuidedAlignLoss,
    UnpairedModalityContrastiveLoss,
)
from sbert_nonling.losses import PairClassificationLoss, SentenceClassificationLoss, STSRegressionLoss
from sbert_nonling.losses.dalr import Consistency, ImageGrounding, TokenGrounding
from sbert_nonling.losses.damsm import damsm_scores

HALF_DTYPES = [torch.bfloat16, torch.float16]
LABELS = torch.tensor([0, 1, 0, 1])
CLASSES = torch.tensor([0, 1, 2, 1])
SCORES = torch.tensor([0.9, 0.8, 0.1, 0.3])
SENTENCES = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field", "a cat sleeps on a mat"]
OTHER_SENTENCES = ["a man plays music", "a woman cuts an onion", "dogs run", "a cat sleeps"]
PAIRS = [SENTENCES, OTHER_SENTENCES]


def at_clamp(loss: SymmetricInfoNCE) -> SymmetricInfoNCE:
    """The learnable temperature pushed past its clamp: scale = max_scale (100, temperature 0.01)."""
    with torch.no_grad():
        loss.logit_scale.fill_(math.log(loss.max_scale) + 1.0)
    assert loss.get_config_dict()["temperature"] == pytest.approx(1 / loss.max_scale)
    return loss


def identity(*linears: torch.nn.Linear) -> None:
    with torch.no_grad():
        for linear in linears:
            linear.weight.copy_(torch.eye(*linear.weight.shape))
            linear.bias.zero_()


def pairs(generator: torch.Generator, noise: float = 0.1) -> list[torch.Tensor]:
    """Anchors (4, 32) sharing one direction, as a young encoder's embeddings do, and positives near them: with the
    default noise every cosine is above 0.98, so logits sit just below 1 / temperature, where half precision is
    coarsest (bfloat16: 0.125 apart below 20, 0.5 below 100)."""
    anchors = torch.randn(1, 32, generator=generator) + 0.1 * torch.randn(4, 32, generator=generator)
    return [anchors, anchors + noise * torch.randn(4, 32, generator=generator)]


# ---------------------------------------------------------------------------------------------------------------------
# 1. The loss math on half-precision inputs, under autocast, equals float32 math on the same values.
#    Each case: (compute(*inputs) -> loss, float32 inputs); the test rounds the inputs to the half dtype first.


def simcse_math(model, generator):
    loss = SimCSELoss(model, temperature=0.05, training_head="none")
    return lambda anchors, positives: loss.compute_loss_from_embeddings([anchors, positives], None), pairs(generator)


def simcse_margin_math(model, generator):
    """KDMCSE's text term: SimCSE with a 0.15 rad angular margin on the negatives."""
    loss = SimCSELoss(model, temperature=0.05, training_head="none", margin=0.15)

    def compute(anchors, positives):
        return loss.compute_loss_from_embeddings([anchors, positives], None)

    return compute, pairs(generator, 0.5)


def teacher_guided_align_math(model, generator):
    """KDMCSE's grounding after its heads: the adaptive margins from the CLIP features and the teacher filter (its
    -inf mask), for the image and the caption targets."""
    loss = TeacherGuidedAlignLoss(model, clip_dimension=32, filter_threshold=0.5)

    def compute(texts, targets, images, captions):
        margins_image, margins_caption, dropped_image, dropped_caption = loss.teacher_guidance(images, captions)
        image_term = loss.grounding_term(texts, targets, margins_image, dropped_image)
        return image_term + loss.grounding_term(texts, targets, margins_caption, dropped_caption)

    projected = [F.normalize(view, dim=-1) for view in pairs(generator, 0.5)]  # as the loss's heads give them
    images = torch.randn(4, 32, generator=generator)
    return compute, [*projected, images, images + 0.3 * torch.randn(4, 32, generator=generator)]


def symmetric_info_nce_math(model, generator):
    loss = at_clamp(SymmetricInfoNCE(model, learnable_temperature=True))
    return lambda anchors, positives: loss.compute_loss_from_embeddings([anchors, positives], None), pairs(generator)


def unpaired_math(mode, cached=False):
    def build(model, generator):
        labels = None if mode == "simclr" else LABELS
        if cached:  # the GradCache step 2: the loss on the cached mini-batch embeddings
            loss = CachedUnpairedModalityContrastiveLoss(model, mode=mode, temperature=0.05, training_head="none")
            return lambda one, two: loss.calculate_loss([one.split(2), two.split(2)], labels), pairs(generator)
        loss = UnpairedModalityContrastiveLoss(model, mode=mode, temperature=0.05, training_head="none")
        return lambda view_1, view_2: loss.compute_loss_from_embeddings([view_1, view_2], labels), pairs(generator)

    return build


def multimodal_align_math(model, generator):
    """MCSE's SimCSE + grounding terms and MACD's symmetric grounding + DAMSM local term at once, heads set to the
    identity (exact in half precision, so only the math after them can differ)."""
    loss = MultimodalAlignLoss(
        model,
        image_dimension=32,
        text_loss=SimCSELoss(model, training_head="none"),
        direction="symmetric",
        temperature=0.05,
        projection_dimension=32,
        projection_head="linear",
        local_weight=1.0,
    )
    identity(loss.text_head[0], loss.image_head[0], loss.local_loss.word_head, loss.local_loss.region_head)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 0, 0, 0]])

    def compute(view_1, view_2, tokens, regions):
        first = {"sentence_embedding": view_1, "token_embeddings": tokens, "attention_mask": mask}
        return sum(loss.compute_loss_from_outputs([first, {"sentence_embedding": view_2}], regions).values())

    # Region values on a 1/8 grid: their mean over the 8 regions (the global image vector) is exact in half precision.
    regions = torch.randint(-8, 9, (4, 8, 32), generator=generator) / 8
    return compute, [*pairs(generator), torch.randn(4, 5, 32, generator=generator), regions]


def damsm_math(model, generator):
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0]])

    def compute(words, regions):
        return damsm_scores(words, mask, regions, (1.0, 5.0, 10.0)).logsumexp(dim=1).mean()

    return compute, [torch.randn(4, 4, 32, generator=generator), torch.randn(4, 9, 32, generator=generator)]


def distill_anchor_math(model, generator):
    """Both anchor terms with the student 1 % away from the teacher: small differences, where they matter."""
    loss = DistillAnchorLoss(model)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]])

    def compute(student, teacher, student_tokens, teacher_tokens):
        student_output = {"token_embeddings": student_tokens, "attention_mask": mask}
        return loss.kl_term(student, teacher) + loss.cosine_term(student_output, {"token_embeddings": teacher_tokens})

    tokens = torch.randn(4, 3, 32, generator=generator)
    return compute, [*pairs(generator, 0.01), tokens, tokens + 0.01 * torch.randn(4, 3, 32, generator=generator)]


def listwise_distillation_math(kind):
    """The ranking loss of the student's margin logits against two teachers' mixed scores (fixed float32 targets)."""

    def build(model, generator):
        teacher = copy.deepcopy(model)
        loss = ListwiseDistillationLoss(
            model, [teacher, teacher], teacher_weights=(0.33, 0.67), kind=kind, margin=0.18
        )
        first, second = pairs(generator)
        teacher_scores = loss.teacher_scores(
            [[{"sentence_embedding": first}] * 2, [{"sentence_embedding": second}] * 2]
        )

        def compute(anchors, positives):
            return loss.compute_loss_from_embeddings([anchors, positives], teacher_scores)

        return compute, pairs(generator)

    return build


def dalr_math(model, generator):
    """DALR's terms after its heads, with the released options: ranking, intra- and cross-modal alignment, image
    grounding with CLIP's adaptive margin and the token-to-sentence InfoNCE."""
    ranking = ListwiseDistillationLoss(
        model, copy.deepcopy(model), margin=0.18, epsilon=1e-7, weight=0.2, text_loss=SimCSELoss(model)
    )
    loss = DALRLoss(model, ranking, clip_dimension=32)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0]])

    def compute(view_1, view_2, teacher, images, projected, tokens):
        scores = loss.ranking_loss.student_scores(view_1, view_2)
        teacher_scores = loss.ranking_loss.teacher_scores([[{"sentence_embedding": teacher}] * 2])
        return (
            loss.ranking_loss.ranking(scores, teacher_scores)
            + loss.intra_modal_term(scores, teacher)
            + loss.cross_modal_term(view_1, images, teacher)
            + loss.image_grounding_term([view_1, view_2], projected, images)
            + loss.token_grounding_term([tokens], view_1, mask)
        )

    view_1, view_2 = pairs(generator)
    inputs = [torch.randn(4, 32, generator=generator) for _ in range(3)]
    return compute, [view_1, view_2, *inputs, torch.randn(4, 4, 32, generator=generator)]


def sentence_classification_math(model, generator):
    loss = SentenceClassificationLoss(model, num_labels=3, hidden_dimension=None)
    inputs = [3 * torch.randn(4, 32, generator=generator)]
    return lambda embeddings: loss.compute_loss_from_embeddings([embeddings], CLASSES), inputs


def pair_classification_math(pair_head):
    def build(model, generator):
        loss = PairClassificationLoss(model, num_labels=3, pair_head=pair_head, hidden_dimension=None)
        return lambda u, v: loss.compute_loss_from_embeddings([u, v], CLASSES), pairs(generator, 1.0)

    return build


def sts_regression_math(model, generator):
    loss = STSRegressionLoss(model, hidden_dimension=None)
    return lambda u, v: loss.compute_loss_from_embeddings([u, v], SCORES), pairs(generator, 1.0)


MATH_CASES = {
    "SimCSELoss-tau0.05": simcse_math,
    "SimCSELoss-margin0.15": simcse_margin_math,
    "TeacherGuidedAlignLoss": teacher_guided_align_math,
    "SymmetricInfoNCE-at-clamp": symmetric_info_nce_math,
    "supcon-tau0.05": unpaired_math("supcon"),
    "simclr-tau0.05": unpaired_math("simclr"),
    "released_label_rank-tau0.05": unpaired_math("released_label_rank"),
    "cached-supcon-tau0.05": unpaired_math("supcon", cached=True),
    "MultimodalAlignLoss": multimodal_align_math,
    "damsm_scores": damsm_math,
    "DistillAnchorLoss": distill_anchor_math,
    "ListwiseDistillationLoss-listmle": listwise_distillation_math("listmle"),
    "ListwiseDistillationLoss-listnet": listwise_distillation_math("listnet"),
    "DALRLoss": dalr_math,
    "SentenceClassificationLoss": sentence_classification_math,
    "PairClassificationLoss-bilinear": pair_classification_math("bilinear"),
    "PairClassificationLoss-concat": pair_classification_math("concat"),
    "STSRegressionLoss": sts_regression_math,
}


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
@pytest.mark.parametrize("case", MATH_CASES)
def test_the_loss_math_runs_in_float32_under_autocast(tiny_model, case, dtype):
    """Inputs in half precision (as the layers before a loss give them under autocast), values exact in that dtype: the
    loss equals the float32 loss of the same values to float32 rounding, and it is a float32 tensor.

    Before the loss math was moved to float32 every case failed: logits / temperature, softmax, logsumexp, KL and
    cosines came out in half precision (SymmetricInfoNCE at its clamp: 0.50 instead of 0.67 in bfloat16; SimCSE and
    SimCLR about 2 % off; DistillAnchorLoss's anchor 70 times too large in bfloat16, negative in float16), and
    nn.Bilinear refused half inputs with its float32 weights (PairClassificationLoss raised)."""
    compute, inputs = MATH_CASES[case](tiny_model, torch.Generator().manual_seed(0))
    reference_inputs = [tensor.to(dtype).float().requires_grad_() for tensor in inputs]
    reference = compute(*reference_inputs)
    reference.backward()
    half_inputs = [tensor.to(dtype).requires_grad_() for tensor in inputs]
    with torch.autocast("cpu", dtype=dtype):
        value = compute(*half_inputs)
    value.backward()
    assert value.dtype == torch.float32
    torch.testing.assert_close(value, reference, rtol=1e-6, atol=1e-6)
    for half, full in zip(half_inputs, reference_inputs):
        # The float32 gradient, rounded to the input's dtype: where an input feeds two terms their half-precision
        # gradients are summed (up to one rounding step of the largest entry), and float16 flushes entries below its
        # subnormal spacing eps * smallest_normal (6e-8; what a GradScaler's loss scaling is for).
        assert half.grad.dtype == dtype
        info = torch.finfo(dtype)
        atol = info.eps * (full.grad.abs().max().item() + info.smallest_normal)
        torch.testing.assert_close(half.grad.float(), full.grad, rtol=info.eps, atol=atol)


def test_a_dead_relu_head_output_gives_a_finite_sts_loss_in_float16(tiny_model, identity_head, padded):
    """A HeadLayer whose ReLU zeroes a whole row (here: negative leading values through the 2-wide identity head): in
    float32 its cosine is 0; a float16 cosine of a zero vector is NaN (its epsilon underflows), and was the loss's."""
    loss = STSRegressionLoss(tiny_model, head_layer=identity_head)
    embeddings = [padded([-1.0, -2.0], [1.0, 0.5]).requires_grad_(), padded([1.0, 1.0], [0.5, 1.0]).requires_grad_()]
    scores = torch.tensor([0.5, 0.9])
    reference = loss.compute_loss_from_embeddings(embeddings, scores)
    with torch.autocast("cpu", dtype=torch.float16):
        value = loss.compute_loss_from_embeddings(embeddings, scores)
    value.backward()
    assert torch.isfinite(value) and all(torch.isfinite(embedding.grad).all() for embedding in embeddings)
    torch.testing.assert_close(value, reference)  # ((0 - 0.5)^2 + (cos - 0.9)^2) / 2, the head exact in float16


# ---------------------------------------------------------------------------------------------------------------------
# 2. A training step of a tiny real model (encoder, the loss's heads, the loss) under autocast: finite, and close to
#    the float32 step. Each case: (loss, columns of sentences, labels).


@pytest.fixture
def mean_model(tiny_encoder_dir):
    """The tiny encoder with mean pooling: its sentence embeddings differ (cosines 0.84-0.98), where [CLS] pooling of
    the random tiny encoder gives one vector for every sentence and every contrastive loss a flat log(batch)."""
    from sbert_nonling.models import build_sentence_model

    return build_sentence_model(tiny_encoder_dir, pooling="mean", max_seq_length=32)


def perturbed(model):
    """The student moved away from the teacher DistillAnchorLoss copied, so both anchor terms are non-zero."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return model


def distill_anchor_step(model):
    loss = DistillAnchorLoss(model, base_loss=SimCSELoss(model))
    perturbed(model)
    return loss, [SENTENCES, SENTENCES], None


def region_features(count: int, dimension: int) -> torch.Tensor:
    return torch.randn(4, count, dimension, generator=torch.Generator().manual_seed(2))


def unpaired_step(mode, cached=False):
    def build(model):
        kind = CachedUnpairedModalityContrastiveLoss if cached else UnpairedModalityContrastiveLoss
        options = {"mini_batch_size": 2} if cached else {}
        loss = kind(model, mode=mode, temperature=0.05, **options)
        return loss, PAIRS, None if mode == "simclr" else LABELS

    return build


def symmetric_info_nce_step(token_head):
    def build(model):
        loss = at_clamp(SymmetricInfoNCE(model, learnable_temperature=True, token_head=token_head))
        return loss, PAIRS, None

    return build


def mcse_step(model):
    loss = MultimodalAlignLoss(model, image_dimension=16, text_loss=SimCSELoss(model), weight=1.0)
    return loss, [SENTENCES, SENTENCES], region_features(1, 16)[:, 0]


def macd_damsm_step(model):
    loss = MultimodalAlignLoss(
        model,
        image_dimension=16,
        direction="symmetric",
        temperature=0.1,
        projection_head="linear",
        local_weight=1.0,
    )
    return loss, [SENTENCES, SENTENCES], region_features(9, 16)


def listwise_distillation_step(model):
    teacher = perturbed(copy.deepcopy(model))
    loss = ListwiseDistillationLoss(model, teacher, margin=0.18, text_loss=SimCSELoss(model))
    return loss, [SENTENCES, SENTENCES], None


def dalr_step(model):
    """DALR with every released term on; the teacher a perturbed copy of the student."""
    teacher = perturbed(copy.deepcopy(model))
    ranking = ListwiseDistillationLoss(model, teacher, margin=0.18, weight=0.2, text_loss=SimCSELoss(model))
    loss = DALRLoss(
        model,
        ranking,
        clip_dimension=32,
        consistency=Consistency(mismatch="released_roll"),
        image_grounding=ImageGrounding(weight=0.1),
        token_grounding=TokenGrounding(weight=0.2),
    )
    return loss, [SENTENCES, SENTENCES], torch.randn(4, 2, 32, generator=torch.Generator().manual_seed(3))


def kdmcse_step(model):
    """KDMCSE's caption step: SimCSE with its margin plus both grounding terms, the teacher filter on."""
    text_loss = SimCSELoss(model, margin=0.15)
    loss = TeacherGuidedAlignLoss(model, clip_dimension=16, text_loss=text_loss, weight=1.0, filter_threshold=0.5)
    return loss, [SENTENCES, SENTENCES], torch.randn(4, 2, 16, generator=torch.Generator().manual_seed(3))


def task_step(kind, columns, labels, **options):
    return lambda model: (kind(model, hidden_dimension=16, **options), columns, labels)


TRAINING_CASES = {
    "SimCSELoss-tau0.05": lambda model: (SimCSELoss(model, temperature=0.05), [SENTENCES, SENTENCES], None),
    "supcon-tau0.05": unpaired_step("supcon"),
    "simclr-tau0.05": unpaired_step("simclr"),
    "released_label_rank-tau0.05": unpaired_step("released_label_rank"),
    "cached-supcon-tau0.05": unpaired_step("supcon", cached=True),
    "SymmetricInfoNCE-at-clamp": symmetric_info_nce_step("none"),
    "SymmetricInfoNCE-token-head-at-clamp": symmetric_info_nce_step("linear_gelu_layernorm"),
    "MultimodalAlignLoss-MCSE": mcse_step,
    "MultimodalAlignLoss-MACD-DAMSM": macd_damsm_step,
    "DistillAnchorLoss": distill_anchor_step,
    "ListwiseDistillationLoss": listwise_distillation_step,
    "DALRLoss-released-terms": dalr_step,
    "TeacherGuidedAlignLoss-KDMCSE": kdmcse_step,
    "SentenceClassificationLoss": task_step(SentenceClassificationLoss, [SENTENCES], CLASSES, num_labels=3),
    "PairClassificationLoss-bilinear": task_step(PairClassificationLoss, PAIRS, CLASSES, num_labels=3),
    "PairClassificationLoss-concat": task_step(
        PairClassificationLoss, PAIRS, CLASSES, num_labels=3, pair_head="concat"
    ),
    "STSRegressionLoss": task_step(STSRegressionLoss, PAIRS, SCORES),
}

#: How far the autocast step's loss may lie from the float32 step's (relative), and how closely its gradient must point
#: the same way (cosine of the concatenated gradients). bfloat16 keeps 8 significant bits (2-3 decimal digits: one
#: rounding moves a value by up to 2^-8 = 0.4 %), float16 11 bits (3-4 digits: up to 2^-11 = 0.05 %). The loss math
#: itself adds nothing (test above); the encoder's and heads' roundings, amplified by 1 / temperature up to 100, move
#: the loss by a few of those: we allow 8 (3e-2 and 4e-3). Measured here: bfloat16 at most 1.2e-2 (the token head at
#: the clamp; the other cases below 2e-3), float16 at most 3e-4; gradient cosines at least 0.97 and 0.9999.
TOLERANCE = {torch.bfloat16: (3e-2, 0.9), torch.float16: (4e-3, 0.99)}


def training_step(loss, model, columns, labels, dtype=None):
    """Loss value and every gradient (model and loss-owned parameters) of one forward + backward on fresh features."""
    loss.zero_grad(set_to_none=True)
    features = [model.preprocess(sentences) for sentences in columns]
    with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        value = loss(features, labels)
        value = sum(value.values()) if isinstance(value, dict) else value
    value.backward()
    grads = {name: parameter.grad for name, parameter in loss.named_parameters() if parameter.grad is not None}
    return value.detach(), grads


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
@pytest.mark.parametrize("case", TRAINING_CASES)
def test_a_training_step_under_autocast_is_finite_and_close_to_float32(mean_model, case, dtype):
    """Forward and backward of the encoder, the loss's heads and the loss under CPU autocast, against the same step
    in float32, at the extreme settings (temperature 0.05; SymmetricInfoNCE's learnable temperature at its clamp)."""
    torch.manual_seed(0)
    loss, columns, labels = TRAINING_CASES[case](mean_model)
    loss.eval()  # no dropout (encoder and heads), so both steps run the same network
    reference, reference_grads = training_step(loss, mean_model, columns, labels)
    value, grads = training_step(loss, mean_model, columns, labels, dtype)
    assert value.dtype == torch.float32 and torch.isfinite(value)
    assert grads.keys() == reference_grads.keys()
    assert all(torch.isfinite(grad).all() for grad in grads.values())
    rtol, min_cosine = TOLERANCE[dtype]
    assert value.item() == pytest.approx(reference.item(), rel=rtol)
    flat, reference_flat = (
        torch.cat([g.flatten().float() for g in step.values()]) for step in (grads, reference_grads)
    )
    assert torch.nn.functional.cosine_similarity(flat, reference_flat, dim=0) > min_cosine
