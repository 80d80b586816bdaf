"""Listwise ranking distillation for bi-encoders: the in-batch scores learn the ranking of frozen teachers (DALR)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, cast, get_args

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn
from transformers import PreTrainedModel

from sbert_nonling.losses.angular_margin import angular_margin_logits
from sbert_nonling.losses.base import LossConfig
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.util.choices import ListwiseKind
from sbert_nonling.util.frozen import Frozen
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.similarity import cosine_similarity
from sbert_nonling.util.views import forward_views


def list_mle(student_scores: Tensor, teacher_scores: Tensor, epsilon: float = 0.0) -> Tensor:
    r"""ListMLE: the negative log-likelihood of the teacher's ranking of each row under the student's scores.

    With :math:`\pi_i` the columns of row :math:`i` sorted by the teacher's score, descending (a stable sort: ties
    keep the column order):

    .. math::

        \mathcal{L} = \frac{1}{B} \sum_i \sum_{j=1}^{n} \Big[
            \log \sum_{k \ge j} e^{s_{i \pi_i(k)}} - s_{i \pi_i(j)} \Big]

    Args:
        student_scores: the student's scores (B, n), e.g. in-batch logits; the gradient flows through them.
        teacher_scores: the teacher's scores (B, n); only their order counts.
        epsilon: 0 (the exact likelihood); DALR's and RankCSE's released code use 1e-7, added inside the log after
            the row's maximum is subtracted: each suffix sum is floored at about ``epsilon`` times the row's largest
            term, which raises the loss of the list's tail (lower-ranked entries more than ~16 logits below the top).

    Returns:
        The mean over rows, a scalar.

    Example::

        import torch
        from sbert_nonling.losses.listwise_distillation import list_mle

        student, teacher = torch.randn(4, 4), torch.randn(4, 4)
        loss = list_mle(student, teacher)
    """
    order = teacher_scores.argsort(dim=-1, descending=True, stable=True)
    ranked = student_scores.gather(-1, order)
    if epsilon:
        ranked = ranked - ranked.max(dim=-1, keepdim=True).values
    suffix = ranked.flip(-1).logcumsumexp(dim=-1).flip(-1)  # log sum_{k >= j} e^{s_k}
    if epsilon:
        suffix = torch.logaddexp(suffix, torch.full_like(suffix, math.log(epsilon)))  # log(sum + epsilon)
    return (suffix - ranked).sum(dim=-1).mean()


def list_net(student_scores: Tensor, teacher_scores: Tensor) -> Tensor:
    r"""ListNet (top-one probabilities): the cross-entropy of the teacher's softmax over each row with the student's,
    the diagonal (each row's positive) left out of both, as in DALR's and RankCSE's released code.

    .. math::

        \mathcal{L} = -\frac{1}{B} \sum_i \sum_{j \ne i}
            \operatorname{softmax}_{j \ne i}(t_i)_j \, \log \operatorname{softmax}_{j \ne i}(s_i)_j

    Args:
        student_scores: the student's in-batch scores (B, B).
        teacher_scores: the teacher's in-batch scores (B, B), e.g. cosine / teacher temperature.

    Returns:
        The mean over rows, a scalar.

    Example::

        import torch
        from sbert_nonling.losses.listwise_distillation import list_net

        loss = list_net(torch.randn(4, 4), torch.randn(4, 4))
    """
    diagonal = torch.eye(*student_scores.shape, dtype=torch.bool, device=student_scores.device)
    log_student = F.log_softmax(student_scores.masked_fill(diagonal, float("-inf")), dim=-1)
    teacher = F.softmax(teacher_scores.masked_fill(diagonal, float("-inf")), dim=-1)
    return -(teacher * log_student.masked_fill(diagonal, 0.0)).sum(dim=-1).mean()


def mixed_teacher_scores(
    anchors: Sequence[Tensor], candidates: Sequence[Tensor], weights: Sequence[float], temperature: float
) -> Tensor:
    r"""The teachers' in-batch scores, mixed: :math:`t_{ij} = \sum_k w_k \cos(a^k_i, c^k_j) / \tau_T` (float32 at
    least).

    Args:
        anchors: each teacher's embeddings of the anchors (B, d_k).
        candidates: each teacher's embeddings of the candidates (B, d_k).
        weights: :math:`w_k`, one per teacher.
        temperature: :math:`\tau_T`.

    Example::

        import torch
        from sbert_nonling.losses.listwise_distillation import mixed_teacher_scores

        first, second = torch.randn(4, 8), torch.randn(4, 6)
        scores = mixed_teacher_scores([first, second], [first, second], [0.33, 0.67], temperature=0.05)
    """
    with float32_math(*anchors, *candidates) as tensors:
        count = len(anchors)
        scores = [
            weight * cosine_similarity(anchor, candidate)
            for weight, anchor, candidate in zip(weights, tensors[:count], tensors[count:], strict=True)
        ]
        return torch.stack(scores).sum(dim=0) / temperature


class ListwiseDistillationLoss(LossConfig, nn.Module):
    config_keys = ("teacher_weights", "kind", "temperature", "teacher_temperature", "margin", "weight", "epsilon")
    bibtex_keys = ("cao2007listnet", "xia2008listmle", "liu2023rankcse", "dalr2025")

    def __init__(
        self,
        model: SentenceTransformer,
        teachers: SentenceTransformer | Sequence[SentenceTransformer],
        teacher_weights: Sequence[float] | None = None,
        kind: ListwiseKind = "listmle",
        temperature: float = 0.05,
        teacher_temperature: float = 0.05,
        margin: float = 0.0,
        weight: float = 1.0,
        epsilon: float = 0.0,
        text_loss: SimCSELoss | None = None,
    ) -> None:
        r"""Listwise ranking distillation for a bi-encoder: each anchor's in-batch scores over the candidates (the
        positives of the batch) are trained to rank them as frozen teacher models do (RankCSE; DALR's ranking term).
        sentence-transformers has ListNet / ListMLE only for cross-encoders.

        For a batch of :math:`B` pairs :math:`(a_i, c_i)`, with :math:`g` the optional training head (SimCSE's MLP,
        taken from ``text_loss``) and :math:`T_k` the teachers:

        .. math::

            s_{ij} = \frac{\cos(g(a_i), g(c_j))}{\tau} \;\text{(or the angular-margin logits)}, \qquad
            t_{ij} = \sum_k w_k \frac{\cos(T_k(a_i), T_k(c_j))}{\tau_T}

            \text{ListMLE: } \mathcal{L} = \frac{1}{B} \sum_i \sum_j \Big[
                \log \sum_{k \ge j} e^{s_{i \pi_i(k)}} - s_{i \pi_i(j)} \Big], \quad
                \pi_i = \operatorname{argsort}_{desc}(t_i)

            \text{ListNet: } \mathcal{L} = -\frac{1}{B} \sum_i \sum_{j \ne i}
                \operatorname{softmax}_{j \ne i}(t_i)_j \log \operatorname{softmax}_{j \ne i}(s_i)_j

        With ``margin`` > 0 the scores are the angular-margin logits of the contrastive term
        (:func:`~sbert_nonling.losses.angular_margin.angular_margin_logits`, negatives only), which DALR's released
        code ranks. The ranking of a row is a stable sort of the teacher's scores, so ties keep the column order; the
        released code shuffles the columns with the global random generator first, which gives the same value when no
        two teacher scores of a row are equal (a tie needs e.g. one sentence twice in a batch; there the released value
        depends on the shuffle). All math in float32 under autocast.

        The teachers run **on-line**: the in-batch list of each anchor depends on which sentences the shuffle put in
        its batch, so a teacher's in-batch scores cannot be stored once per sentence, while its embeddings can be
        computed on the fly at the cost of one forward pass (no backward) per teacher, every column merged into it.
        They are frozen sub-modules (``teachers``, each a :class:`~sbert_nonling.util.frozen.Frozen`): kept in eval
        mode (dropout off, so their embeddings are deterministic and both columns of a ``(s, s)`` pair get the same
        teacher embedding), run under ``torch.no_grad``, never in the optimizer, left out of the loss's
        ``state_dict``. A teacher with the student's vocabulary gets the student's tokens (as in DALR's code); any
        other teacher gets the batch decoded from the student's tokens and tokenised again by its own tokenizer (the
        decoded text is what the student's tokenizer kept: lower-cased for an uncased student). A pre-computed
        alternative is out of scope.

        Args:
            model: the student SentenceTransformer.
            teachers: one or more frozen SentenceTransformer models, e.g.
                ``princeton-nlp/unsup-simcse-bert-base-uncased`` and ``voidism/diffcse-bert-base-uncased-sts`` (DALR's
                SimCSE and DiffCSE teachers; its scripts give local paths only, so which SimCSE is not known).
            teacher_weights: :math:`w_k`, one per teacher; default equal weights. DALR: ``(0.33, 0.67)``.
            kind: ``"listmle"`` (DALR's scripts) or ``"listnet"`` (the released command-line default).
            temperature: :math:`\tau` of the student's scores (0.05).
            teacher_temperature: :math:`\tau_T` of the teachers' scores (DALR: 0.05); ListMLE uses their order only.
            margin: the constant angular margin on the student's negatives, in radians; 0: plain cosine / temperature
                (DALR's released code: 0.18, the margin of its contrastive term).
            weight: the weight of the ranking term in the returned dict (RankCSE's and DALR's gamma: 1); 0 leaves
                the term out (with a ``text_loss`` only).
            epsilon: ListMLE's epsilon inside the log; 0, the exact likelihood; the released code's 1e-7 (see
                :func:`list_mle`).
            text_loss: a :class:`SimCSELoss` on the same batches: the student's scores are taken on its training head
                (DALR ranks SimCSE's MLP outputs) and its term is returned too (``simcse``). None: the model's
                embeddings, the ranking term only.

        References:
            - Cao et al. Learning to Rank: From Pairwise Approach to Listwise Approach (ListNet), ICML 2007.
            - Xia et al. Listwise Approach to Learning to Rank: Theory and Algorithm (ListMLE), ICML 2008.
            - Liu et al. RankCSE: Unsupervised Sentence Representations Learning via Learning to Rank, ACL 2023.
              https://arxiv.org/abs/2305.16726
            - DALR: Dual-level Alignment Learning for Multimodal Sentence Representation Learning, ACL 2025
              Findings. https://arxiv.org/abs/2506.21096

        Inputs:
            +-------------------------------------------------+--------+
            | Texts                                           | Labels |
            +=================================================+========+
            | (sentence, same sentence) pairs (SimCSE-style)  | none   |
            +-------------------------------------------------+--------+
            | (anchor, positive) pairs                        | none   |
            +-------------------------------------------------+--------+

        Relations:
            - :func:`list_mle`, :func:`list_net` and :func:`mixed_teacher_scores` are the pure functions;
              :class:`~sbert_nonling.losses.dalr.DALRLoss` reuses them and this loss's teachers.

        Example:
            ::

                from datasets import Dataset
                from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
                from sbert_nonling.losses import ListwiseDistillationLoss, SimCSELoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # offline stand-ins for e.g. "bert-base-uncased" and a SimCSE teacher: tiny random BERTs
                sentences = ["A man is playing a guitar.", "A woman slices an onion.", "Two dogs run."]
                model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))
                teacher = build_sentence_model(str(build_tiny_encoder("tiny-teacher", sentences, hidden_size=32)))
                train_dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences})
                loss = ListwiseDistillationLoss(model, teacher, kind="listmle", text_loss=SimCSELoss(model))
                args = SentenceTransformerTrainingArguments("output", max_steps=1, report_to="none")
                SentenceTransformerTrainer(model=model, args=args, train_dataset=train_dataset, loss=loss).train()
        """
        super().__init__()
        teachers = [teachers] if isinstance(teachers, SentenceTransformer) else list(teachers)
        teacher_weights = [1.0 / len(teachers)] * len(teachers) if teacher_weights is None else list(teacher_weights)
        if not teachers or len(teacher_weights) != len(teachers):
            raise ValueError(
                f"teacher_weights={teacher_weights} must give one weight per teacher ({len(teachers)} teachers)."
            )
        if any(weight < 0 for weight in teacher_weights) or not sum(teacher_weights) > 0:
            raise ValueError(
                f"teacher_weights={teacher_weights} must be at least 0 each, with a positive sum (they mix the "
                "teachers' scores)."
            )
        if kind not in get_args(ListwiseKind):
            raise ValueError(f"kind={kind!r} must be one of {list(get_args(ListwiseKind))}.")
        if temperature <= 0 or teacher_temperature <= 0:
            raise ValueError(
                f"temperature={temperature} and teacher_temperature={teacher_temperature} must be positive "
                "(DALR: 0.05)."
            )
        if margin < 0 or epsilon < 0:
            raise ValueError(f"margin={margin} and epsilon={epsilon} must be >= 0.")
        if weight == 0 and text_loss is None:
            raise ValueError("weight=0 without a text_loss leaves no term to train: give a positive weight.")
        self.model = model
        self.teachers = nn.ModuleList(Frozen(teacher) for teacher in teachers)  # built again from their names
        self.shares_tokens = [teacher.tokenizer.get_vocab() == model.tokenizer.get_vocab() for teacher in teachers]
        self.teacher_weights = teacher_weights
        self.kind = kind
        self.temperature = temperature
        self.teacher_temperature = teacher_temperature
        self.margin = margin
        self.weight = weight
        self.epsilon = epsilon
        self.text_loss = text_loss

    @property
    def head(self) -> nn.Module:
        """The training head the student's scores are taken on: ``text_loss``'s, else the identity."""
        return nn.Identity() if self.text_loss is None else self.text_loss.head

    @property
    def teacher_models(self) -> list[SentenceTransformer]:
        """The frozen teachers, in order."""
        return [cast(SentenceTransformer, teacher.module) for teacher in self.teachers]

    def forward(
        self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None
    ) -> dict[str, Tensor]:
        sentence_features = list(sentence_features)
        teacher_outputs = self.teacher_outputs(sentence_features)
        return self.compute_loss_from_outputs(forward_views(self.model, sentence_features), teacher_outputs)

    def teacher_outputs(self, sentence_features: list[dict[str, Tensor]]) -> list[list[dict[str, Tensor]]]:
        """Every teacher's output of every column (eval mode, no gradient): ``[teacher][column]``, the columns in one
        merged forward pass per teacher (:func:`~sbert_nonling.util.views.forward_views`): no comparison of the
        columns' values, which would wait for the device.

        Args:
            sentence_features: the student's tokenised columns.
        """
        outputs = []
        with torch.no_grad():
            for teacher, shares_tokens in zip(self.teacher_models, self.shares_tokens, strict=True):
                inputs = [self.teacher_features(teacher, features, shares_tokens) for features in sentence_features]
                outputs.append(forward_views(teacher, inputs))
        return outputs

    def teacher_features(
        self, teacher: SentenceTransformer, features: dict[str, Tensor], shares_tokens: bool
    ) -> dict[str, Tensor]:
        """A teacher's input for a student's tokenised column: the same tokens if it has the student's vocabulary,
        else the decoded sentences tokenised by the teacher.

        Args:
            teacher: the teacher.
            features: the student's tokenised column.
            shares_tokens: whether the teacher has the student's vocabulary.
        """
        if shares_tokens:
            return dict(features)  # modules write into the dict
        sentences = self.model.tokenizer.batch_decode(features["input_ids"], skip_special_tokens=True)
        device = features["input_ids"].device
        return {
            key: value.to(device) if isinstance(value, Tensor) else value
            for key, value in teacher.preprocess(sentences).items()
        }

    def student_scores(self, anchors: Tensor, candidates: Tensor) -> Tensor:
        """The student's in-batch scores (B, B): cosine / temperature, or the angular-margin logits (float32 at least).

        Args:
            anchors: the anchors' embeddings after the training head (B, d).
            candidates: the candidates' embeddings after the training head (B, d).
        """
        with float32_math(anchors, candidates) as (anchors, candidates):
            similarities = cosine_similarity(anchors, candidates)
            if self.margin:
                return angular_margin_logits(similarities, self.margin, self.temperature)
            return similarities / self.temperature

    def ranking(self, student_scores: Tensor, teacher_scores: Tensor) -> Tensor:
        """The unweighted listwise loss of ``kind`` (float32 at least).

        Args:
            student_scores: the student's in-batch scores (B, B).
            teacher_scores: the teachers' mixed in-batch scores (B, B).
        """
        with float32_math(student_scores, teacher_scores) as (student_scores, teacher_scores):
            if self.kind == "listmle":
                return list_mle(student_scores, teacher_scores, self.epsilon)
            return list_net(student_scores, teacher_scores)

    def teacher_scores(self, teacher_outputs: list[list[dict[str, Tensor]]]) -> Tensor:
        """The teachers' mixed in-batch scores (B, B) of the first column (rows) against the second (columns).

        Args:
            teacher_outputs: every teacher's output of every column, ``[teacher][column]``.
        """
        return mixed_teacher_scores(
            [outputs[0]["sentence_embedding"] for outputs in teacher_outputs],
            [outputs[1]["sentence_embedding"] for outputs in teacher_outputs],
            self.teacher_weights,
            self.teacher_temperature,
        )

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], teacher_scores: Tensor) -> Tensor:
        """The unweighted ranking loss of the anchors' and candidates' embeddings (after the training head) against
        the teachers' in-batch scores.

        Args:
            embeddings: ``[anchors, candidates]``, (B, d) each, after the training head.
            teacher_scores: the teachers' mixed in-batch scores (B, B), from :meth:`teacher_scores`.
        """
        return self.ranking(self.student_scores(embeddings[0], embeddings[1]), teacher_scores)

    def compute_loss_from_outputs(
        self, outputs: list[dict[str, Tensor]], teacher_outputs: list[list[dict[str, Tensor]]]
    ) -> dict[str, Tensor]:
        """The loss terms from the student's and the teachers' outputs of the two columns: with a ``text_loss``,
        ``simcse``, and ``ranking`` (times ``weight``; left out at weight 0).

        Args:
            outputs: the student's output of each column.
            teacher_outputs: every teacher's output of every column, ``[teacher][column]``.
        """
        if len(outputs) != 2:
            raise ValueError(f"{type(self).__name__} takes (anchor, positive) pairs, got {len(outputs)} columns.")
        losses: dict[str, Tensor] = {}
        if self.text_loss is not None:
            losses["simcse"] = self.text_loss.compute_loss_from_outputs(outputs)
        if self.weight:
            embeddings = [self.head(output["sentence_embedding"]) for output in outputs]
            losses["ranking"] = self.weight * self.compute_loss_from_embeddings(
                embeddings, self.teacher_scores(teacher_outputs)
            )
        return losses

    def get_config_dict(self) -> dict[str, Any]:
        text_loss = None if self.text_loss is None else self.text_loss.get_config_dict()
        return {
            **super().get_config_dict(),
            "teachers": [_model_name(teacher) for teacher in self.teacher_models],
            "text_loss": text_loss,
        }


def _model_name(model: SentenceTransformer) -> str:
    """A model's name for the model card: its Hub name or its transformer's local path when known, else its class
    name."""
    name = model.model_card_data.base_model
    if not name:
        pretrained = next((module for module in model.modules() if isinstance(module, PreTrainedModel)), None)
        name = None if pretrained is None else pretrained.config.name_or_path
    return str(name) if name else type(model).__name__
