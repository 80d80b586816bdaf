"""Anchor the student to a frozen copy of itself (MACD's "lifelong" term) while another loss trains it."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Literal, Protocol, get_args, runtime_checkable

import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.frozen import Frozen
from sbert_nonling.util.precision import float32_math

CosineTarget = Literal["token_embeddings", "sentence_embedding"]


@runtime_checkable
class LossFromOutputs(Protocol):
    """What :class:`DistillAnchorLoss` needs from its base loss: the loss from the model outputs of each column, so the
    student runs once per batch (SimCSELoss, MultimodalAlignLoss, DAMSMLoss)."""

    def compute_loss_from_outputs(
        self, outputs: list[dict[str, Tensor]], labels: Tensor | None
    ) -> Tensor | dict[str, Tensor]:
        """The loss (or its terms) from the model outputs.

        Args:
            outputs: the model's output of each column.
            labels: the batch's labels (image features for the grounding losses), or None.
        """


class DistillAnchorLoss(LossConfig, nn.Module):
    config_keys = ("kl_weight", "cosine_weight", "temperature", "cosine_target")
    bibtex_keys = ("cui2020macd",)

    def __init__(
        self,
        model: SentenceTransformer,
        base_loss: LossFromOutputs | None = None,
        teacher: SentenceTransformer | None = None,
        kl_weight: float = 5.0,
        cosine_weight: float = 1.0,
        temperature: float = 2.0,
        cosine_target: CosineTarget = "token_embeddings",
    ) -> None:
        r"""Keeps the student close to a frozen teacher (by default a frozen copy of the starting model) while
        ``base_loss`` trains it: learning without forgetting, MACD's "lifelong" anchor.

        .. math::

            \mathcal{L} = \mathcal{L}_{base}
                + w_{kl} \, T^2 \, \mathrm{KL}\big(p^{T}_{teacher} \,\|\, p^{T}_{student}\big)
                + w_{cos} \, \big(1 - \overline{\cos}(s, t)\big)

        with :math:`p^{T}(i) = \mathrm{softmax}_j(\cos(e_i, e_j) / T)` the in-batch similarity distribution of each
        sentence of the first column, and the cosine term averaged over non-pad tokens or over sentences.

        Both terms are computed in float32 under autocast. The teacher runs once per batch column, under
        ``torch.no_grad`` and in eval mode; it is a frozen sub-module (``teacher``, a
        :class:`~sbert_nonling.util.frozen.Frozen`), so it moves with the loss to the model's device and is never
        optimised, and it is left out of the loss's ``state_dict``, so checkpoints do not store a second copy of the
        encoder. The student runs once; ``base_loss`` gets its outputs through
        ``compute_loss_from_outputs`` (:class:`LossFromOutputs`).

        Args:
            model: the student being trained.
            base_loss: the loss that trains the student (its terms are returned alongside), or None; a
                :class:`LossFromOutputs` (a ValueError otherwise).
            teacher: the frozen reference; default a frozen deep copy of ``model`` taken now.
            kl_weight, cosine_weight: :math:`w_{kl}`, :math:`w_{cos}` (MACD's code: 5 and 1); 0 disables a term.
            temperature: :math:`T` of the KL term (MACD: 2).
            cosine_target: ``"token_embeddings"`` (MACD's last hidden states) or ``"sentence_embedding"``.

        Reproduction notes:
            MACD's code applies the KL term to MLM logits of re-masked tokens; a sentence encoder has no MLM head, so
            here it is on the in-batch similarity distribution (docs/mcse_macd.md).

        References:
            - Cui, Zheng, Wang. MACD, EMNLP 2020.
            - Li and Hoiem. Learning without Forgetting, ECCV 2016.

        Inputs:
            +----------------------------------------+--------------------------+
            | Texts                                  | Labels                   |
            +========================================+==========================+
            | whatever ``base_loss`` takes           | whatever ``base_loss`` takes |
            +----------------------------------------+--------------------------+

        Example:
            ::

                from sbert_nonling import DistillAnchorLoss, MultimodalAlignLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                grounding = MultimodalAlignLoss(model, image_dimension=2048, direction="symmetric", temperature=0.1)
                loss = DistillAnchorLoss(model, base_loss=grounding)  # teacher = frozen copy of the starting model
        """
        super().__init__()
        if base_loss is not None and not isinstance(base_loss, LossFromOutputs):
            raise ValueError(
                f"{type(self).__name__} shares the student's outputs with its base loss, but "
                f"{type(base_loss).__name__} has no "
                "compute_loss_from_outputs(outputs, labels) (the LossFromOutputs protocol); add it to the base loss."
            )
        if temperature <= 0:
            raise ValueError(f"temperature={temperature!r} must be positive (MACD uses 2).")
        if kl_weight < 0 or cosine_weight < 0 or kl_weight == cosine_weight == 0:
            raise ValueError(f"kl_weight={kl_weight} and cosine_weight={cosine_weight} must be >= 0 and not both 0.")
        if cosine_target not in get_args(CosineTarget):
            raise ValueError(f"cosine_target={cosine_target!r} must be one of {list(get_args(CosineTarget))}.")
        self.model = model
        self.base_loss = base_loss
        # the teacher is the starting model, built again with the loss: checkpoints leave it out
        self.teacher = Frozen(copy.deepcopy(model) if teacher is None else teacher)
        self.kl_weight = kl_weight
        self.cosine_weight = cosine_weight
        self.temperature = temperature
        self.cosine_target = cosine_target

    def forward(
        self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None
    ) -> dict[str, Tensor]:
        sentence_features = list(sentence_features)
        teacher_features = [dict(features) for features in sentence_features]  # modules write into the dicts
        student = [self.model(features) for features in sentence_features]
        teacher = [self.teacher(features) for features in teacher_features]  # eval mode, no gradient
        losses: dict[str, Tensor] = {}
        if self.base_loss is not None:
            result = self.base_loss.compute_loss_from_outputs(student, labels)
            losses = dict(result) if isinstance(result, dict) else {"base": result}
        if self.kl_weight:
            losses["anchor_kl"] = self.kl_weight * self.kl_term(
                student[0]["sentence_embedding"], teacher[0]["sentence_embedding"]
            )
        if self.cosine_weight:
            losses["anchor_cosine"] = self.cosine_weight * self.cosine_term(student[0], teacher[0])
        return losses

    def kl_term(self, student: Tensor, teacher: Tensor) -> Tensor:
        """T^2 * KL(teacher || student) of the in-batch cosine-similarity distributions at temperature T (float32).

        Args:
            student: the student's sentence embeddings (B, h).
            teacher: the teacher's sentence embeddings (B, h).
        """
        temperature = self.temperature
        with float32_math(student, teacher) as (student, teacher):
            student, teacher = F.normalize(student, dim=-1), F.normalize(teacher, dim=-1)
            log_student = F.log_softmax(student @ student.T / temperature, dim=-1)
            log_teacher = F.log_softmax(teacher @ teacher.T / temperature, dim=-1)
            return temperature**2 * F.kl_div(log_student, log_teacher, log_target=True, reduction="batchmean")

    def cosine_term(self, student: dict[str, Tensor], teacher: dict[str, Tensor]) -> Tensor:
        """Mean of 1 - cos(student, teacher) over non-pad tokens or over sentences (float32).

        Args:
            student: the student's model output.
            teacher: the teacher's model output of the same batch.
        """
        target = self.cosine_target  # the output key: "token_embeddings" (B, T, h) or "sentence_embedding" (B, h)
        with float32_math(student[target], teacher[target]) as (student_vectors, teacher_vectors):
            distance = 1 - F.cosine_similarity(student_vectors, teacher_vectors, dim=-1)  # (B, T) or (B,)
            if target == "sentence_embedding":
                return distance.mean()
            mask = student["attention_mask"].to(distance.dtype)
            return (distance * mask).sum() / mask.sum()

    def get_config_dict(self) -> dict[str, Any]:
        return {
            **super().get_config_dict(),
            "base_loss": None if self.base_loss is None else type(self.base_loss).__name__,
        }
