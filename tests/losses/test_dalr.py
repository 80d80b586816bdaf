"""DALRLoss against DALR's released loss code (kangverse/DALR 849ece9, model_modified.DALR.compute_loss, run on the
same seeded inputs in float64: docs/research/kdmcse_dalr.md, section 4), and on real tiny models."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses import DALRLoss, ListwiseDistillationLoss, SimCSELoss
from sbert_nonling.losses.angular_margin import angular_margin_logits
from sbert_nonling.losses.dalr import (
    Consistency,
    ImageGrounding,
    SoftAlignment,
    TokenGrounding,
    consistency_loss,
    soft_label_kl,
    token_sentence_info_nce,
)
from sbert_nonling.losses.listwise_distillation import mixed_teacher_scores
from sbert_nonling.models import build_sentence_model, build_tiny_encoder
from sbert_nonling.training.loss_state import loss_parameters, loss_state_dict

BATCH, WIDTH, PROJECTION, TOKENS = 8, 16, 12, 6
MARGIN, TEMPERATURE, TEACHER_WEIGHTS = 0.18, 0.05, (0.33, 0.67)
#: The released code's options: what DALRLoss and its ranking loss need to reproduce its total.
RELEASED_RANKING = {"margin": MARGIN, "epsilon": 1e-7}
RELEASED = {
    "consistency": Consistency(mismatch="released_roll"),
    "image_grounding": ImageGrounding(weight=0.1),
    "token_grounding": TokenGrounding(weight=0.2, normalization="released_token"),
}
SENTENCES = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field", "a cat sleeps on a mat"]


@pytest.fixture
def released():
    """DALR's reference inputs, drawn in float32 from seed 0 in this order, then cast to float64: the student's MLP
    outputs z of two views, two teachers' embeddings of two views, the raw CLIP image features, the teachers' mixed
    token states of two views (without [CLS]) and their mask, the projected captions and images of L_cross and the
    aligned captions and images of L_cons."""
    torch.manual_seed(0)
    drawn = {"z1": 0.25 * torch.randn(BATCH, WIDTH)}
    drawn["z2"] = drawn["z1"] + 0.25 * torch.randn(BATCH, WIDTH)
    drawn["first_1"] = drawn["z1"] + 0.2 * torch.randn(BATCH, WIDTH)
    drawn["first_2"] = drawn["first_1"] + 0.1 * torch.randn(BATCH, WIDTH)
    drawn["second_1"] = drawn["z1"] + 0.2 * torch.randn(BATCH, WIDTH)
    drawn["second_2"] = drawn["second_1"] + 0.1 * torch.randn(BATCH, WIDTH)
    drawn["image"] = torch.randn(BATCH, WIDTH)
    drawn["tokens_1"] = torch.randn(BATCH, TOKENS - 1, WIDTH)
    drawn["tokens_2"] = drawn["tokens_1"] + 0.1 * torch.randn(BATCH, TOKENS - 1, WIDTH)
    drawn["p1"] = F.normalize(torch.randn(BATCH, PROJECTION), dim=-1)
    drawn["p2"] = F.normalize(drawn["p1"] + 0.5 * torch.randn(BATCH, PROJECTION), dim=-1)
    drawn["v"] = F.normalize(torch.randn(BATCH, PROJECTION), dim=-1)
    drawn["text_aligned"] = torch.randn(BATCH, PROJECTION)
    drawn["image_aligned"] = torch.randn(BATCH, PROJECTION)
    inputs = {name: tensor.double() for name, tensor in drawn.items()}
    mask = torch.ones(BATCH, TOKENS, dtype=torch.long)
    for row, length in enumerate([6, 5, 4, 6, 3, 6, 5, 2]):
        mask[row, length:] = 0
    inputs["mask"] = mask[:, 1:]  # [CLS] left out
    inputs["teacher_features"] = TEACHER_WEIGHTS[0] * inputs["first_1"] + TEACHER_WEIGHTS[1] * inputs["second_1"]
    inputs["teacher_scores"] = mixed_teacher_scores(
        [inputs["first_1"], inputs["second_1"]], [inputs["first_2"], inputs["second_2"]], TEACHER_WEIGHTS, TEMPERATURE
    )
    return inputs


def clip_features(count: int, width: int = 32) -> torch.Tensor:
    """Frozen CLIP features of ``count`` captions: [:, 0] their images', [:, 1] their own."""
    return torch.randn(count, 2, width, generator=torch.Generator().manual_seed(3))


def dalr_loss(model, teachers, ranking: dict | None = None, clip_dimension: int = 32, **options) -> DALRLoss:
    """A DALRLoss around a ranking loss on ``teachers`` with SimCSE's term, DALR's ranking weight (0.2) and
    ``ranking``'s settings."""
    ranking_loss = ListwiseDistillationLoss(
        model, teachers, weight=0.2, text_loss=SimCSELoss(model), **(ranking or {})
    )
    return DALRLoss(model, ranking_loss, clip_dimension, **options)


def released_loss(model, teacher) -> DALRLoss:
    """A DALRLoss with the released weights and options."""
    ranking = {"teacher_weights": TEACHER_WEIGHTS, **RELEASED_RANKING}
    return dalr_loss(model, [teacher, teacher], ranking, **RELEASED)


def test_the_released_terms_are_reproduced_by_the_pure_functions(released):
    cosines = F.normalize(released["z1"], dim=-1) @ F.normalize(released["z2"], dim=-1).T
    student = angular_margin_logits(cosines, MARGIN, TEMPERATURE)
    teacher = F.normalize(released["teacher_features"], dim=-1)
    assert soft_label_kl(student, teacher @ teacher.T).item() == pytest.approx(11.92569030, abs=1e-7)
    aligned = consistency_loss(
        released["text_aligned"], released["image_aligned"], released["image_aligned"].roll(5, 0)
    )
    assert aligned.item() == pytest.approx(0.46402826, abs=1e-7)
    tokens = [F.normalize(released[name], dim=1) for name in ("tokens_1", "tokens_2")]
    g2l = [token_sentence_info_nce(view, released["z1"], released["mask"]) for view in tokens]
    assert (sum(g2l) / 2).item() == pytest.approx(16.05812153, abs=1e-7)


def test_every_term_and_the_total_equal_the_released_values(tiny_model, tiny_teacher, released):
    loss = released_loss(tiny_model, tiny_teacher)
    student = loss.ranking_loss.student_scores(released["z1"], released["z2"])
    terms = {
        "ranking": loss.ranking_loss.ranking(student, released["teacher_scores"]),
        "intra_modal_alignment": loss.intra_modal_term(student, released["teacher_features"]),
        "cross_modal_alignment": loss.cross_modal_term(
            released["z1"], released["image"], released["teacher_features"]
        ),
        "consistency": loss.consistency_term(released["text_aligned"], released["image_aligned"]),
        "image_grounding": loss.image_grounding_term(
            [released["p1"], released["p2"]], released["v"], released["image"]
        ),
        "token_grounding": loss.token_grounding_term(
            [released["tokens_1"], released["tokens_2"]], released["z1"], released["mask"]
        ),
    }
    expected = {
        "ranking": 17.67109078,
        "intra_modal_alignment": 11.92569030,
        "cross_modal_alignment": 15.79640084,
        "consistency": 0.46402826,
        "image_grounding": 11.34823270,
        "token_grounding": 16.05812153,
    }
    assert {name: term.item() for name, term in terms.items()} == pytest.approx(expected, abs=1e-7)
    assert all(term.dtype == torch.float64 for term in terms.values())
    contrastive = F.cross_entropy(student, torch.arange(BATCH))  # SimCSE's term with the released margin
    assert contrastive.item() == pytest.approx(0.01767336, abs=1e-7)
    weights = {
        "ranking": loss.ranking_loss.weight,
        "intra_modal_alignment": loss.alignment.intra_modal_weight,
        "cross_modal_alignment": loss.alignment.cross_modal_weight,
        "consistency": loss.consistency.weight,
        "image_grounding": loss.image_grounding.weight,
        "token_grounding": loss.token_grounding.weight,
    }
    total = contrastive + sum(weights[name] * term for name, term in terms.items())
    assert total.item() == pytest.approx(11.86358127, abs=1e-7)


def test_the_default_options_are_the_papers(tiny_model, tiny_teacher, released):
    loss = dalr_loss(tiny_model, tiny_teacher)
    assert (loss.image_grounding.weight, loss.token_grounding.weight, loss.ranking_loss.margin) == (0.0, 0.0, 0.0)
    assert loss.text_projection is None and loss.image_projection is None
    tokens = [released["tokens_1"], released["tokens_2"]]
    token_term = loss.token_grounding_term(tokens, released["z1"], released["mask"])
    assert token_term.item() == pytest.approx(9.09634508, abs=1e-7)
    shuffled = [loss.consistency_term(released["text_aligned"], released["image_aligned"]) for _ in range(3)]
    assert all(torch.isfinite(value) for value in shuffled)


def test_the_shuffled_mismatch_moves_every_image(tiny_model, tiny_teacher):
    loss = dalr_loss(tiny_model, tiny_teacher, consistency=Consistency(margin=-1.0))
    texts = torch.eye(6, dtype=torch.float64)
    # matched pairs cost 0, and with margin -1 every pair with another caption's (orthogonal) image costs 1
    for _ in range(5):
        assert loss.consistency_term(texts, texts).item() == pytest.approx(0.5, abs=1e-12)


def test_a_caption_batch_gives_every_term_with_a_gradient_to_the_student_and_none_to_the_teacher(
    tiny_model, tiny_teacher
):
    loss = dalr_loss(
        tiny_model,
        [tiny_teacher, tiny_teacher],
        {"teacher_weights": TEACHER_WEIGHTS},
        image_grounding=ImageGrounding(weight=0.1),
        token_grounding=TokenGrounding(weight=0.2),
    )
    loss.train()
    features = tiny_model.preprocess(SENTENCES)
    terms = loss([features, dict(features)], clip_features(len(SENTENCES)))
    assert set(terms) == {
        "simcse",
        "ranking",
        "intra_modal_alignment",
        "cross_modal_alignment",
        "consistency",
        "image_grounding",
        "token_grounding",
    }
    assert all(term.ndim == 0 and torch.isfinite(term) for term in terms.values())
    sum(terms.values()).backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in tiny_model.parameters())
    for head in (loss.text_loss.head, loss.text_aligner, loss.image_aligner, loss.text_projection):
        assert head is not None and head[0].weight.grad.abs().sum() > 0
    assert all(p.grad is None and not p.requires_grad for p in tiny_teacher.parameters())
    assert not tiny_teacher.training
    assert not any("teachers." in key for key in loss.state_dict())
    assert not any("teachers." in key for key in loss_state_dict(loss, tiny_model))
    assert not {id(p) for p in tiny_teacher.parameters()} & {id(p) for p in loss_parameters(loss, tiny_model)}


def test_finite_under_bfloat16_autocast(tiny_model, tiny_teacher):
    loss = dalr_loss(tiny_model, tiny_teacher, RELEASED_RANKING, **RELEASED)
    features = tiny_model.preprocess(SENTENCES)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        terms = loss([features, dict(features)], clip_features(len(SENTENCES)))
    assert all(term.dtype == torch.float32 and torch.isfinite(term) for term in terms.values())
    sum(terms.values()).backward()


def test_bad_input_gets_one_clear_sentence(tiny_model, tiny_teacher, tmp_path):
    with pytest.raises(ValueError, match=r"width 32\) with the CLIP features \(clip_dimension=768\)"):
        dalr_loss(tiny_model, tiny_teacher, clip_dimension=768)
    loss = dalr_loss(tiny_model, tiny_teacher, clip_dimension=768, alignment=SoftAlignment(cross_modal_weight=0.0))
    features = tiny_model.preprocess(SENTENCES)
    with pytest.raises(ValueError, match=r"labels of shape \(4, 2, 768\).*got \(4, 768\)"):
        loss([features, dict(features)], torch.randn(4, 768))
    with pytest.raises(ValueError, match="mismatch='random' must be one of"):
        Consistency(mismatch="random")
    with pytest.raises(ValueError, match="normalization='token' must be one of"):
        TokenGrounding(normalization="token")
    with pytest.raises(ValueError, match="temperature=0 and target_temperature=0.5 must be positive"):
        SoftAlignment(temperature=0)
    with pytest.raises(ValueError, match="ImageGrounding's temperature=-1 must be positive"):
        ImageGrounding(temperature=-1)
    wide = build_sentence_model(str(build_tiny_encoder(tmp_path / "wide", SENTENCES, hidden_size=64)), pooling="cls")
    with pytest.raises(ValueError, match=r"mixes its teachers' embeddings: they need one width, got \[32, 64\]"):
        dalr_loss(tiny_model, [tiny_teacher, wide])
    with pytest.raises(ValueError, match=r"token states \(width 64\) with the student's embeddings \(width 32\)"):
        dalr_loss(
            tiny_model,
            wide,
            alignment=SoftAlignment(cross_modal_weight=0.0),
            token_grounding=TokenGrounding(weight=0.2),
        )
    with pytest.raises(ValueError, match="give its ranking loss the SimCSELoss"):
        DALRLoss(tiny_model, ListwiseDistillationLoss(tiny_model, tiny_teacher), clip_dimension=32)


def test_trains_caption_pairs_with_their_clip_features_in_the_trainer(
    tiny_model, tiny_teacher, wiki_sentences, two_step_arguments
):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer

    loss = dalr_loss(tiny_model, tiny_teacher)
    captions = wiki_sentences[:16]
    data = Dataset.from_dict({"anchor": captions, "positive": captions, "label": clip_features(16).tolist()})
    student = [p.detach().clone() for p in tiny_model.parameters()]
    teacher = [p.detach().clone() for p in tiny_teacher.parameters()]
    aligner = loss.text_aligner[0].weight.detach().clone()
    SentenceTransformerTrainer(model=tiny_model, args=two_step_arguments, train_dataset=data, loss=loss).train()
    assert any(not torch.equal(before, p) for before, p in zip(student, tiny_model.parameters(), strict=True))
    assert all(torch.equal(before, p) for before, p in zip(teacher, tiny_teacher.parameters(), strict=True))
    assert not torch.equal(aligner, loss.text_aligner[0].weight)


def test_the_simcse_and_ranking_terms_are_the_ranking_loss_s_own(tiny_model, tiny_teacher):
    loss = dalr_loss(tiny_model, tiny_teacher, alignment=SoftAlignment(0.0, 0.0), consistency=Consistency(0.0))
    features = [tiny_model.preprocess(SENTENCES), tiny_model.preprocess(SENTENCES)]
    teacher_outputs = loss.ranking_loss.teacher_outputs(features)
    outputs = [tiny_model(dict(columns)) for columns in features]
    terms = loss.compute_loss_from_outputs(outputs, clip_features(len(SENTENCES)), teacher_outputs)
    assert terms == loss.ranking_loss.compute_loss_from_outputs(outputs, teacher_outputs)
    assert set(terms) == {"simcse", "ranking"}
    ranking_loss = ListwiseDistillationLoss(tiny_model, tiny_teacher, weight=0.0, text_loss=SimCSELoss(tiny_model))
    unranked = DALRLoss(tiny_model, ranking_loss, clip_dimension=32)  # a term of weight 0 is left out
    assert "ranking" not in unranked.compute_loss_from_outputs(outputs, clip_features(len(SENTENCES)), teacher_outputs)


def test_the_settings_are_grouped_in_the_config_and_the_state_keys_are_the_heads(tiny_model, tiny_teacher):
    loss = released_loss(tiny_model, tiny_teacher)
    config = loss.get_config_dict()
    assert config["consistency"] == {"weight": 0.001, "margin": 0.2, "mismatch": "released_roll", "dimension": 256}
    assert config["alignment"]["temperature"] == 0.45 and config["image_grounding"]["margin"] == 0.18
    assert config["token_grounding"] == {"weight": 0.2, "normalization": "released_token"}
    heads = {key.split(".")[0] for key in loss_state_dict(loss, tiny_model)}
    assert heads == {"loss"} and {key.split(".")[1] for key in loss_state_dict(loss, tiny_model)} == {
        "ranking_loss",
        "text_aligner",
        "image_aligner",
        "text_projection",
        "image_projection",
    }
