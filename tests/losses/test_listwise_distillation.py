"""ListwiseDistillationLoss: ListMLE / ListNet against DALR's released ranking code (kangverse/DALR 849ece9, run on the
same seeded inputs in float64: docs/research/kdmcse_dalr.md, section 4), and the frozen on-line teachers on real
tiny models."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses import ListwiseDistillationLoss, SimCSELoss
from sbert_nonling.losses.angular_margin import angular_margin_logits
from sbert_nonling.losses.listwise_distillation import list_mle, list_net, mixed_teacher_scores
from sbert_nonling.training.loss_state import loss_parameters, loss_state_dict

BATCH, WIDTH, MARGIN, TEMPERATURE, TEACHER_WEIGHTS = 8, 16, 0.18, 0.05, (0.33, 0.67)
SENTENCES = ["a man plays a guitar", "a woman slices an onion", "two dogs run in a field", "a cat sleeps on a mat"]


@pytest.fixture
def released():
    """DALR's reference inputs (z: the student's MLP outputs; t: two teachers' embeddings of two views), drawn in
    float32 from seed 0 in this order, then cast to float64; the student's margin logits and the mixed teacher
    scores."""
    torch.manual_seed(0)
    z1 = 0.25 * torch.randn(BATCH, WIDTH)
    z2 = z1 + 0.25 * torch.randn(BATCH, WIDTH)
    first_1 = z1 + 0.2 * torch.randn(BATCH, WIDTH)
    first_2 = first_1 + 0.1 * torch.randn(BATCH, WIDTH)
    second_1 = z1 + 0.2 * torch.randn(BATCH, WIDTH)
    second_2 = second_1 + 0.1 * torch.randn(BATCH, WIDTH)
    z1, z2, first_1, first_2, second_1, second_2 = (
        tensor.double() for tensor in (z1, z2, first_1, first_2, second_1, second_2)
    )
    cosines = F.normalize(z1, dim=-1) @ F.normalize(z2, dim=-1).T
    teacher = mixed_teacher_scores([first_1, second_1], [first_2, second_2], TEACHER_WEIGHTS, TEMPERATURE)
    return {
        "z1": z1,
        "z2": z2,
        "student": angular_margin_logits(cosines, MARGIN, TEMPERATURE),
        "plain": cosines / TEMPERATURE,
        "teacher": teacher,
    }


def test_the_released_teacher_mixture_is_the_weighted_sum_of_each_teachers_cosines(released):
    assert released["teacher"][0, :3].tolist() == pytest.approx([18.9031438, 2.92686647, -1.74452137], abs=1e-7)


def test_list_mle_with_the_released_epsilon_gives_the_released_values(released):
    assert list_mle(released["student"], released["teacher"], 1e-7).item() == pytest.approx(17.67109078, abs=1e-7)
    assert list_mle(released["plain"], released["teacher"], 1e-7).item() == pytest.approx(23.91876645, abs=1e-7)


def test_list_mle_is_the_negative_log_likelihood_of_the_teachers_ranking():
    student = torch.tensor([[2.0, -1.0, 0.5], [0.3, 0.1, -0.4]], dtype=torch.float64)
    teacher = torch.tensor([[0.1, 0.9, 0.5], [3.0, 2.0, 1.0]], dtype=torch.float64)
    expected = 0.0
    for scores, order in zip(student, teacher.argsort(dim=-1, descending=True), strict=True):
        ranked = scores[order].tolist()
        expected -= sum(ranked[j] - math.log(sum(math.exp(s) for s in ranked[j:])) for j in range(len(ranked)))
    assert list_mle(student, teacher).item() == pytest.approx(expected / 2, abs=1e-12)
    assert list_mle(student, 5 * teacher - 2).item() == pytest.approx(expected / 2, abs=1e-12)  # the order only


def test_the_released_epsilon_floors_the_tail_of_the_list(released):
    exact = list_mle(released["student"], released["teacher"]).item()
    assert exact == pytest.approx(15.34178104, abs=1e-7)  # the released epsilon adds 2.33 on these logits
    scaled = list_mle(released["student"] / 10, released["teacher"], 1e-7).item()
    assert scaled == pytest.approx(list_mle(released["student"] / 10, released["teacher"]).item(), abs=1e-5)


def test_tied_teacher_scores_keep_the_column_order():
    student = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    tied = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    ordered = torch.tensor([[2.0, 1.0, 0.0]], dtype=torch.float64)
    assert list_mle(student, tied).item() == list_mle(student, ordered).item()


def test_list_net_gives_the_released_value_and_leaves_the_diagonal_out(released):
    assert list_net(released["student"], released["teacher"]).item() == pytest.approx(2.47238583, abs=1e-7)
    student, teacher = released["student"].clone(), released["teacher"].clone()
    student.fill_diagonal_(1e3)
    teacher.fill_diagonal_(-1e3)
    assert list_net(student, teacher).item() == pytest.approx(2.47238583, abs=1e-7)


def test_the_loss_entry_point_with_the_released_settings_gives_the_released_values(tiny_model, tiny_teacher, released):
    loss = ListwiseDistillationLoss(tiny_model, tiny_teacher, margin=MARGIN, epsilon=1e-7)
    embeddings = [released["z1"], released["z2"]]
    assert loss.compute_loss_from_embeddings(embeddings, released["teacher"]).item() == pytest.approx(
        17.67109078, abs=1e-7
    )
    loss.kind = "listnet"
    assert loss.compute_loss_from_embeddings(embeddings, released["teacher"]).item() == pytest.approx(
        2.47238583, abs=1e-7
    )


def test_the_gradient_reaches_the_student_and_its_head_and_never_the_teacher(tiny_model, tiny_teacher):
    simcse = SimCSELoss(tiny_model)
    loss = ListwiseDistillationLoss(tiny_model, tiny_teacher, text_loss=simcse)
    loss.train()
    features = tiny_model.preprocess(SENTENCES)
    terms = loss([features, dict(features)], None)
    assert set(terms) == {"simcse", "ranking"} and all(torch.isfinite(term) for term in terms.values())
    terms["ranking"].backward()
    assert simcse.head[0].weight.grad is not None and simcse.head[0].weight.grad.abs().sum() > 0
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in tiny_model.parameters())
    assert all(p.grad is None and not p.requires_grad for p in tiny_teacher.parameters())
    assert not tiny_teacher.training  # eval mode, dropout off, though loss.train() reached it


def test_the_teachers_are_frozen_sub_modules_left_out_of_the_optimizer_and_the_state(tiny_model, tiny_teacher):
    loss = ListwiseDistillationLoss(tiny_model, [tiny_teacher, tiny_teacher], teacher_weights=TEACHER_WEIGHTS)
    assert dict(loss.named_children())["teachers"][0].module is tiny_teacher  # moves with the loss to the device
    teacher_ids = {id(p) for p in tiny_teacher.parameters()}
    assert not teacher_ids & {id(p) for p in loss_parameters(loss, tiny_model)}
    assert not any(key.startswith("teachers.") for key in loss.state_dict())
    assert not any(".teachers." in key for key in loss_state_dict(loss, tiny_model))
    config = loss.get_config_dict()
    assert config["teacher_weights"] == list(TEACHER_WEIGHTS) and len(config["teachers"]) == 2


def test_a_teacher_reads_every_column_in_one_forward_pass(tiny_model, tiny_teacher):
    calls = []

    def count(module, inputs, output):
        calls.append(output["sentence_embedding"].shape[0])

    tiny_teacher.register_forward_hook(count)
    loss = ListwiseDistillationLoss(tiny_model, tiny_teacher)
    features = tiny_model.preprocess(SENTENCES)
    loss([features, dict(features)], None)
    loss([features, tiny_model.preprocess(SENTENCES[::-1])], None)
    assert calls == [2 * len(SENTENCES)] * 2  # both columns merged: no comparison of their values on the host


def test_the_teacher_scores_mix_each_teachers_cosines_of_the_sentences(tiny_model, tiny_teacher):
    loss = ListwiseDistillationLoss(tiny_model, [tiny_teacher, tiny_teacher], teacher_weights=(0.25, 0.75))
    features = tiny_model.preprocess(SENTENCES)
    scores = loss.teacher_scores(loss.teacher_outputs([features, dict(features)]))
    embeddings = F.normalize(tiny_teacher.encode(SENTENCES, convert_to_tensor=True), dim=-1)
    torch.testing.assert_close(scores, embeddings @ embeddings.T / 0.05, atol=1e-4, rtol=1e-5)


def test_a_teacher_with_another_vocabulary_reads_the_sentences_with_its_own_tokenizer(
    tiny_model, tmp_path, wiki_sentences
):
    from sbert_nonling.models import build_sentence_model, build_tiny_encoder

    folder = build_tiny_encoder(tmp_path / "teacher", wiki_sentences, vocab_size=300, hidden_size=16)
    teacher = build_sentence_model(str(folder), pooling="cls", max_seq_length=32)
    loss = ListwiseDistillationLoss(tiny_model, teacher)
    assert loss.shares_tokens == [False]
    features = tiny_model.preprocess(SENTENCES)
    outputs = loss.teacher_outputs([features, dict(features)])
    torch.testing.assert_close(
        outputs[0][0]["sentence_embedding"], teacher.encode(SENTENCES, convert_to_tensor=True), atol=1e-5, rtol=1e-5
    )
    assert torch.isfinite(loss([features, dict(features)], None)["ranking"])


def test_bad_settings_get_one_clear_sentence(tiny_model, tiny_teacher):
    with pytest.raises(ValueError, match="one weight per teacher"):
        ListwiseDistillationLoss(tiny_model, [tiny_teacher, tiny_teacher], teacher_weights=[1.0])
    with pytest.raises(ValueError, match="at least 0 each, with a positive sum"):
        ListwiseDistillationLoss(tiny_model, [tiny_teacher, tiny_teacher], teacher_weights=[-1.0, 2.0])
    with pytest.raises(ValueError, match="kind='listwise'"):
        ListwiseDistillationLoss(tiny_model, tiny_teacher, kind="listwise")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="temperature"):
        ListwiseDistillationLoss(tiny_model, tiny_teacher, teacher_temperature=0.0)
    loss = ListwiseDistillationLoss(tiny_model, tiny_teacher)
    features = tiny_model.preprocess(SENTENCES)
    with pytest.raises(ValueError, match="3 columns"):
        loss([features, features, features], None)


@pytest.mark.parametrize("kind", ["listmle", "listnet"])
def test_trains_sentence_pairs_in_the_trainer(kind, tiny_model, tiny_teacher, wiki_sentences, two_step_arguments):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer

    simcse = SimCSELoss(tiny_model)
    loss = ListwiseDistillationLoss(tiny_model, tiny_teacher, kind=kind, text_loss=simcse)
    data = Dataset.from_dict({"anchor": wiki_sentences[:16], "positive": wiki_sentences[:16]})
    student = [p.detach().clone() for p in tiny_model.parameters()]
    teacher = [p.detach().clone() for p in tiny_teacher.parameters()]
    head = simcse.head[0].weight.detach().clone()
    SentenceTransformerTrainer(model=tiny_model, args=two_step_arguments, train_dataset=data, loss=loss).train()
    assert not torch.equal(head, simcse.head[0].weight)  # the shared SimCSE head is trained too
    assert any(not torch.equal(before, p) for before, p in zip(student, tiny_model.parameters(), strict=True))
    assert all(torch.equal(before, p) for before, p in zip(teacher, tiny_teacher.parameters(), strict=True))


def test_every_permutation_of_a_row_is_ranked_by_the_likelihood():
    """ListMLE is lowest when the student orders the row as the teacher does."""
    teacher = torch.tensor([[3.0, 2.0, 1.0]], dtype=torch.float64)
    values = {
        order: list_mle(torch.tensor([order], dtype=torch.float64), teacher).item()
        for order in itertools.permutations([3.0, 2.0, 1.0])
    }
    assert min(values, key=values.__getitem__) == (3.0, 2.0, 1.0)
