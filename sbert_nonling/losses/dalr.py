"""DALR's loss on caption batches: SimCSE, ranking distillation from text teachers, and the soft alignment of the
student's in-batch distributions with text teachers and CLIP image features."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, get_args

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.losses.listwise_distillation import ListwiseDistillationLoss
from sbert_nonling.losses.teacher_guided_align import teacher_guided_grounding
from sbert_nonling.util.choices import ConsistencyMismatch, TokenNormalization
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.views import forward_views

#: How far DALR's released code rolls the images to pair each caption with another caption's image.
RELEASED_ROLL = 5


def soft_label_kl(
    logits: Tensor, soft_labels: Tensor, temperature: float = 0.45, target_temperature: float = 0.5
) -> Tensor:
    r"""KL divergence of each row's target distribution from the student's, averaged over rows ('batchmean'):
    :math:`\frac{1}{B} \sum_i \mathrm{KL}\big(\operatorname{softmax}(q_i / \tau_q) \,\|\,
    \operatorname{softmax}(s_i / \tau_s)\big)`.

    Args:
        logits: the student's scores (B, n) (DALR: in-batch logits, already divided by the contrastive temperature).
        soft_labels: the targets' similarities (B, n) (a teacher's or CLIP's cosines).
        temperature: :math:`\tau_s` (DALR: 0.45).
        target_temperature: :math:`\tau_q` (DALR: 0.5).

    Example::

        import torch
        from sbert_nonling.losses.dalr import soft_label_kl

        loss = soft_label_kl(torch.randn(4, 4) / 0.05, torch.rand(4, 4))
    """
    targets = F.softmax(soft_labels / target_temperature, dim=-1)
    return F.kl_div(F.log_softmax(logits / temperature, dim=-1), targets, reduction="batchmean")


def token_sentence_info_nce(tokens: Tensor, sentences: Tensor, mask: Tensor, temperature: float = 0.05) -> Tensor:
    r"""Global-to-local InfoNCE (DALR's released code): each token of sentence :math:`n` (a teacher's token state)
    is the positive of the student's sentence vector :math:`z_n` among the tokens of the batch's other sentences.

    .. math::

        \mathcal{L} = \frac{1}{B} \sum_n \frac{1}{|M_n|} \sum_{\ell \in M_n} -\log
            \frac{e^{\langle x_{n\ell}, z_n \rangle / \tau}}
            {e^{\langle x_{n\ell}, z_n \rangle / \tau} + \sum_{m \ne n} \sum_{\ell' \in M_m}
            e^{\langle x_{m\ell'}, z_n \rangle / \tau}}

    with :math:`M_n` the non-padding tokens of sentence :math:`n`; inner products, no normalisation here.

    Args:
        tokens: token states (B, L, d).
        sentences: sentence vectors (B, d).
        mask: 1 for tokens, 0 for padding (B, L); every sentence needs one token.
        temperature: :math:`\tau` (0.05).

    Example::

        import torch
        import torch.nn.functional as F
        from sbert_nonling.losses.dalr import token_sentence_info_nce

        tokens, sentences = F.normalize(torch.randn(4, 5, 8), dim=-1), torch.randn(4, 8)
        loss = token_sentence_info_nce(tokens, sentences, torch.ones(4, 5))
    """
    valid = mask.bool()
    scores = torch.einsum("nd,mld->nml", sentences, tokens) / temperature  # sentence n against token l of m
    positives = scores.diagonal(dim1=0, dim2=1).T  # (B, L): each sentence's own tokens
    others = ~torch.eye(len(sentences), dtype=torch.bool, device=scores.device)
    negatives = scores.masked_fill(~(others[:, :, None] & valid[None]), float("-inf")).flatten(1).logsumexp(dim=-1)
    token_losses = torch.logaddexp(positives, negatives[:, None]) - positives
    return ((token_losses * valid).sum(dim=-1) / valid.sum(dim=-1)).mean()


def consistency_loss(texts: Tensor, images: Tensor, mismatched_images: Tensor, margin: float = 0.2) -> Tensor:
    r"""DALR's consistency term: matched (caption, image) pairs pulled together, mismatched ones pushed below a
    cosine margin, :math:`\frac{1}{2B} \sum_i \big[(1 - \cos(t_i, v_i)) + \max(0, \cos(t_i, \tilde v_i) - m)\big]`
    (``torch.nn.CosineEmbeddingLoss``).

    Args:
        texts: the aligned captions (B, c).
        images: the aligned images of the captions (B, c).
        mismatched_images: aligned images of other captions (B, c).
        margin: :math:`m` (DALR: 0.2).

    Example::

        import torch
        from sbert_nonling.losses.dalr import consistency_loss

        texts, images = torch.randn(4, 8), torch.randn(4, 8)
        loss = consistency_loss(texts, images, images.roll(1, dims=0))
    """
    targets = torch.cat([texts.new_ones(len(texts)), -texts.new_ones(len(texts))])  # made on the device: no copy
    return F.cosine_embedding_loss(
        torch.cat([texts, texts]), torch.cat([images, mismatched_images]), targets, margin=margin
    )


def aligner(dimension: int, output_dimension: int) -> nn.Sequential:
    """DALR's consistency aligner: ``Linear(d, d) + BatchNorm + ReLU + Linear(d, c) + BatchNorm + ReLU``.

    Args:
        dimension: the input width.
        output_dimension: the aligned width.
    """
    return nn.Sequential(
        nn.Linear(dimension, dimension),
        nn.BatchNorm1d(dimension),
        nn.ReLU(),
        nn.Linear(dimension, output_dimension),
        nn.BatchNorm1d(output_dimension),
        nn.ReLU(),
    )


@dataclass(frozen=True)
class SoftAlignment:
    r"""The settings of DALR's KL alignment terms: :math:`\mathcal{L}_{IMA}` (the student's in-batch distributions
    aligned with the teachers' similarities) and :math:`\mathcal{L}_{CMA}` (with CLIP's image similarities too).

    Args:
        intra_modal_weight: :math:`w_{IMA}` (released: 0.2); 0 leaves the term out.
        cross_modal_weight: :math:`w_{CMA}` (released: 0.1); 0 leaves the term out.
        temperature: the KL temperature of the student's logits (0.45).
        target_temperature: the KL temperature of the similarities they are aligned with (0.5).
    """

    intra_modal_weight: float = 0.2
    cross_modal_weight: float = 0.1
    temperature: float = 0.45
    target_temperature: float = 0.5

    def __post_init__(self) -> None:
        if min(self.temperature, self.target_temperature) <= 0:
            raise ValueError(
                f"SoftAlignment's temperature={self.temperature} and target_temperature={self.target_temperature} "
                "must be positive."
            )


@dataclass(frozen=True)
class Consistency:
    r"""The settings of DALR's caption-image consistency term :math:`\mathcal{L}_{cons}` (:func:`consistency_loss` of
    the aligned captions and images).

    Args:
        weight: :math:`w_{cons}` (released: 0.1 x 0.01); 0 leaves the term and its aligners out.
        margin: the cosine margin of mismatched pairs (0.2).
        mismatch: how each caption gets another caption's image: ``"shuffle"`` (the paper: a random permutation of
            the batch, moving every image, from torch's global generator) or ``"released_roll"`` (the released code:
            the images rolled by 5 rows; a batch of 5 pairs every caption with its own image).
        dimension: the aligners' output width (256).
    """

    weight: float = 0.001
    margin: float = 0.2
    mismatch: ConsistencyMismatch = "shuffle"
    dimension: int = 256

    def __post_init__(self) -> None:
        if self.mismatch not in get_args(ConsistencyMismatch):
            raise ValueError(
                f"Consistency's mismatch={self.mismatch!r} must be one of {list(get_args(ConsistencyMismatch))}."
            )


@dataclass(frozen=True)
class ImageGrounding:
    r"""The settings of the released code's image grounding :math:`\mathcal{L}_{cross}`: KDMCSE's grounding term
    (:func:`~sbert_nonling.losses.teacher_guided_align.teacher_guided_grounding`) of the projected captions against
    the projected images, the angular margin adapted by CLIP's image similarities.

    Args:
        weight: :math:`w_{cross}` (released: 0.1; default 0: off, with no projections).
        margin: the base angular margin, radians (released: 0.18).
        temperature: the logits' temperature (0.05).
        projection_dimension: the width of the projections (256).
    """

    weight: float = 0.0
    margin: float = 0.18
    temperature: float = 0.05
    projection_dimension: int = 256

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"ImageGrounding's temperature={self.temperature} must be positive.")


@dataclass(frozen=True)
class TokenGrounding:
    r"""The settings of the released code's token-to-sentence term :math:`\mathcal{L}_{g2l}`
    (:func:`token_sentence_info_nce` of the teachers' token states against the student's sentence vector).

    Args:
        weight: :math:`w_{g2l}` (released: 0.2; default 0: off).
        normalization: how the teachers' token states are L2-normalised: over the feature axis (``"feature"``, each
            token a unit vector) or over the token axis of each sentence, padding included (``"released_token"``, the
            released code, which makes a token's length depend on the sentence's other tokens and padding; the paper
            has no such term).
    """

    weight: float = 0.0
    normalization: TokenNormalization = "feature"

    def __post_init__(self) -> None:
        if self.normalization not in get_args(TokenNormalization):
            raise ValueError(
                f"TokenGrounding's normalization={self.normalization!r} must be one of "
                f"{list(get_args(TokenNormalization))}."
            )


class DALRLoss(LossConfig, nn.Module):
    config_keys = ("clip_dimension",)
    bibtex_keys = ("dalr2025",)

    def __init__(
        self,
        model: SentenceTransformer,
        ranking_loss: ListwiseDistillationLoss,
        clip_dimension: int,
        alignment: SoftAlignment = SoftAlignment(),
        consistency: Consistency = Consistency(),
        image_grounding: ImageGrounding = ImageGrounding(),
        token_grounding: TokenGrounding = TokenGrounding(),
    ) -> None:
        r"""DALR (He et al., ACL 2025 Findings) on caption batches: SimCSE's contrastive term plus a cross-modal
        level (consistency with the caption's image, alignment of the student's in-batch distributions with CLIP's
        image similarities) and an intra-modal level (listwise ranking distillation from frozen text teachers,
        alignment with the teachers' similarities).

        For captions with student vectors :math:`z^{(1)}, z^{(2)}` (two dropout views after SimCSE's MLP),
        :math:`s_{ij} = \cos(z^{(1)}_i, z^{(2)}_j) / \tau` (or its angular-margin logits), teachers :math:`T_k`
        mixed by :math:`w_k`, CLIP image features :math:`v` and :math:`\mathrm{KL}_{\tau}(s, q) = \frac{1}{B} \sum_i
        \mathrm{KL}(\operatorname{softmax}(q_i / 0.5) \,\|\, \operatorname{softmax}(s_i / 0.45))`:

        .. math::

            \mathcal{L} = \mathcal{L}_{SimCSE}
                + w_{cons} \mathcal{L}_{cons} + w_{CMA} \mathcal{L}_{CMA}
                + w_{rank} \mathrm{ListMLE}(s, t) + w_{IMA} \mathrm{KL}_{\tau}(s, q^{tt})
                \;[+ w_{cross} \mathcal{L}_{cross} + w_{g2l} \mathcal{L}_{g2l}]

            t_{ij} = \sum_k w_k \frac{\cos(T_k(x_i), T_k(x_j))}{\tau_T}, \quad
            q^{tt}_{ij} = \cos(\bar T_i, \bar T_j), \; \bar T = \sum_k w_k T_k(x), \quad
            q^{vv}_{ij} = \cos(v_i, v_j)

            \mathcal{L}_{CMA} = \tfrac{1}{2} \big[\mathrm{KL}_{\tau}(p^{\top}, q^{vv})
                + \mathrm{KL}_{\tau}(p, q^{tt})\big], \quad p_{ij} = \cos(z^{(1)}_i, v_j) / \tau

            \mathcal{L}_{cons} = \frac{1}{2B} \sum_i \big[1 - \cos(a_t(z^{(1)}_i), a_v(v_i))
                + \max(0, \cos(a_t(z^{(1)}_i), a_v(v_{\sigma(i)})) - 0.2)\big]

        with :math:`a_t, a_v` the consistency aligners (Linear + BatchNorm + ReLU, twice) and :math:`\sigma` a
        shuffle of the batch that moves every image. :math:`\mathcal{L}_{SimCSE}` and :math:`w_{rank}
        \mathrm{ListMLE}(s, t)` are ``ranking_loss``'s terms (:class:`ListwiseDistillationLoss`, whose
        ``compute_loss_from_outputs`` this loss calls, as sentence-transformers' wrappers call the loss they wrap); its
        teachers' outputs, scores :math:`s` and training head serve the other terms too. The
        paper's total (as secondary summaries give it: not checked against the PDF) is :math:`\mathcal{L}_{Info} +
        \lambda(\mathcal{L}_{cons} + \mathcal{L}_{CMA}) + \mu(\mathcal{L}_{rank} + \mathcal{L}_{IMA})`; the
        defaults are those terms with the released code's weights (:math:`\lambda` = 0.1, :math:`\mu` = 0.2: the
        ranking loss's ``weight=0.2``, and 0.01 more on the consistency term). :math:`p`
        compares the student's text vectors with the raw CLIP features, so the student's width must equal CLIP's (768
        for ViT-L/14).

        The released code (kangverse/DALR, ``model_modified.py``) adds two terms, off by default here:
        :math:`\mathcal{L}_{cross}`, KDMCSE's image grounding (captions' pooled vectors and images through
        ``Linear(., 256) + Tanh`` projections, the angular margin adapted by :math:`q^{vv}`, both views), and
        :math:`\mathcal{L}_{g2l}`, an InfoNCE from each teacher token to the student's sentence vector
        (:func:`token_sentence_info_nce`). Its total, ``L_cl + 0.1 (0.01 L_cons + L_CMA + L_cross) + 0.2 (L_IMA +
        L_rank + L_g2l)``, is reached with ``margin=0.18`` and ``epsilon=1e-7`` on the ranking loss,
        ``margin=0.18`` on its ``text_loss``, and ``Consistency(mismatch="released_roll")``,
        ``ImageGrounding(weight=0.1)`` and ``TokenGrounding(weight=0.2, normalization="released_token")`` here.

        The terms come back as a dict (``simcse``, ``ranking``, ``intra_modal_alignment``, ``cross_modal_alignment``,
        ``consistency``, ``image_grounding``, ``token_grounding``; a term of weight 0 is left out), which the trainer
        sums and logs. The teachers are frozen sub-modules of the ranking loss
        (:class:`~sbert_nonling.losses.listwise_distillation.ListwiseDistillationLoss`): eval mode, no gradient, not in
        the optimizer nor in the ``state_dict``, run once per batch (both columns in one forward) for every term. All
        math is float32 under autocast. The caption batches are DALR's paired steps; its text-only (wiki) batches take
        ``text_loss`` alone.

        Args:
            model: the student SentenceTransformer (pooling: the [CLS] vector, as in DALR).
            ranking_loss: the :class:`ListwiseDistillationLoss` of the caption batches, with its ``text_loss`` (the
                :class:`SimCSELoss` whose term, ``simcse``, is returned and whose training head gives :math:`z`:
                share it with the text-only batches), its frozen text teachers (DALR: SimCSE and DiffCSE BERT-base
                checkpoints mixed 0.33 / 0.67, read as released: [CLS] pooling without their MLP, the student's
                tokens, max length 32), ``kind`` ListMLE, ``weight`` :math:`w_{rank}` (DALR: 0.2), and the
                ``temperature`` / angular ``margin`` of the student's logits :math:`s`, also used for :math:`p` (the
                temperature for :math:`\mathcal{L}_{g2l}` too; paper: no margin; released 0.18).
            clip_dimension: the width :math:`D` of the CLIP features in the labels (768 for ViT-L/14).
            alignment: :class:`SoftAlignment`, the KL terms :math:`\mathcal{L}_{IMA}` and :math:`\mathcal{L}_{CMA}`
                (weights 0.2, 0.1; KL temperatures 0.45, 0.5).
            consistency: :class:`Consistency`, :math:`\mathcal{L}_{cons}` (weight 0.001, margin 0.2, a shuffle).
            image_grounding: :class:`ImageGrounding`, the released-only :math:`\mathcal{L}_{cross}` (off).
            token_grounding: :class:`TokenGrounding`, the released-only :math:`\mathcal{L}_{g2l}` (off).

        References:
            - He, Ding, Wang, Li, Teng, Ji. DALR: Dual-level Alignment Learning for Multimodal Sentence
              Representation Learning. Findings of ACL 2025. https://arxiv.org/abs/2506.21096

        Inputs:
            +-----------------------------+------------------------------------------------------------------------+
            | Texts                       | Labels                                                                 |
            +=============================+========================================================================+
            | (caption, same caption)     | frozen CLIP features (2, D) per caption: [0] the image's CLIP image    |
            |                             | embedding, [1] the caption's CLIP text embedding (unused by DALR)      |
            +-----------------------------+------------------------------------------------------------------------+

        Relations:
            - The SimCSE and ranking terms are
              :class:`~sbert_nonling.losses.listwise_distillation.ListwiseDistillationLoss`'s (``ranking_loss``, on
              SimCSE's head); :math:`\mathcal{L}_{cross}` is
              :class:`~sbert_nonling.losses.TeacherGuidedAlignLoss`'s image term
              (:func:`~sbert_nonling.losses.teacher_guided_align.teacher_guided_grounding`) with CLIP's image
              similarities as the soft labels (KDMCSE's adaptive margin).

        Example:
            ::

                import torch
                from sbert_nonling.losses import DALRLoss, ListwiseDistillationLoss, SimCSELoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # offline stand-ins for e.g. "bert-base-uncased" and a SimCSE teacher: tiny random BERTs
                sentences = ["A man is playing a guitar.", "A woman slices an onion.", "Two dogs run."]
                model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))
                teacher = build_sentence_model(str(build_tiny_encoder("tiny-teacher", sentences, hidden_size=32)))
                ranking = ListwiseDistillationLoss(model, teacher, weight=0.2, text_loss=SimCSELoss(model))
                loss = DALRLoss(model, ranking, clip_dimension=32)
                features = [model.preprocess(sentences), model.preprocess(sentences)]
                clip = torch.randn(3, 2, 32)  # per caption: its image's and its own CLIP embedding
                terms = loss(features, clip)
                sum(terms.values()).backward()
        """
        super().__init__()
        if ranking_loss.text_loss is None:
            raise ValueError(
                "DALRLoss trains SimCSE's term too: give its ranking loss the SimCSELoss of the batches "
                "(ListwiseDistillationLoss(..., text_loss=SimCSELoss(model)))."
            )
        width = embedding_dimension(model)
        teacher_widths = sorted({embedding_dimension(teacher) for teacher in ranking_loss.teacher_models})
        mixes_teachers = alignment.intra_modal_weight or alignment.cross_modal_weight or token_grounding.weight
        if len(teacher_widths) > 1 and mixes_teachers:
            raise ValueError(f"DALRLoss mixes its teachers' embeddings: they need one width, got {teacher_widths}.")
        if token_grounding.weight and teacher_widths != [width]:
            raise ValueError(
                f"DALRLoss's token term compares the teachers' token states (width {teacher_widths[0]}) with the "
                f"student's embeddings (width {width}): they need the same width, or set TokenGrounding(weight=0)."
            )
        if alignment.cross_modal_weight and width != clip_dimension:
            raise ValueError(
                f"DALRLoss's cross-modal alignment compares the student's embeddings (width {width}) with the CLIP "
                f"features (clip_dimension={clip_dimension}) directly: they must have the same width, or set "
                "SoftAlignment(cross_modal_weight=0)."
            )
        self.model = model
        self.ranking_loss = ranking_loss
        self.text_loss = ranking_loss.text_loss
        self.clip_dimension = clip_dimension
        self.alignment = alignment
        self.consistency = consistency
        self.image_grounding = image_grounding
        self.token_grounding = token_grounding
        self.text_aligner = aligner(width, consistency.dimension) if consistency.weight else None
        self.image_aligner = aligner(clip_dimension, consistency.dimension) if consistency.weight else None
        projection = image_grounding.projection_dimension
        self.text_projection = (
            make_training_head("mlp", width, projection, name="projection_head") if image_grounding.weight else None
        )
        self.image_projection = (
            make_training_head("mlp", clip_dimension, projection, name="projection_head")
            if image_grounding.weight
            else None
        )

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None) -> dict[str, Tensor]:
        sentence_features = list(sentence_features)
        teacher_outputs = self.ranking_loss.teacher_outputs(sentence_features)
        return self.compute_loss_from_outputs(forward_views(self.model, sentence_features), labels, teacher_outputs)

    def check_clip_features(self, labels: Tensor | None, batch_size: int) -> Tensor:
        """The CLIP features of the batch, (B, 2, clip_dimension); a ValueError naming the shape otherwise.

        Args:
            labels: the batch's labels.
            batch_size: the number of captions.
        """
        expected = (batch_size, 2, self.clip_dimension)
        if not isinstance(labels, Tensor) or tuple(labels.shape) != expected or not labels.is_floating_point():
            shape = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
            raise ValueError(
                f"DALRLoss expects labels of shape {expected} (per caption: its image's and its own CLIP "
                f"embedding, float), got {shape}."
            )
        if batch_size < 2:
            raise ValueError(f"DALRLoss needs at least 2 captions per batch, got {batch_size}.")
        return labels

    def compute_loss_from_outputs(
        self,
        outputs: list[dict[str, Tensor]],
        labels: Tensor | None,
        teacher_outputs: list[list[dict[str, Tensor]]],
    ) -> dict[str, Tensor]:
        """DALR's terms from the student's outputs of the two caption views, the CLIP features and the teachers'
        outputs (:meth:`ListwiseDistillationLoss.teacher_outputs`), weighted: the ranking loss's (``simcse``,
        ``ranking``), then this loss's own.

        Args:
            outputs: the student's output of each view.
            labels: the CLIP features (B, 2, clip_dimension).
            teacher_outputs: every teacher's output of every view, ``[teacher][view]``.
        """
        if len(outputs) != 2:
            raise ValueError(f"DALRLoss takes (caption, same caption) pairs, got {len(outputs)} columns.")
        pooled = [output["sentence_embedding"] for output in outputs]
        images = self.check_clip_features(labels, len(pooled[0]))[:, 0]
        losses = self.ranking_loss.compute_loss_from_outputs(outputs, teacher_outputs)
        texts = [self.ranking_loss.head(embedding) for embedding in pooled]
        teacher_features = self.mixed_teacher_outputs(teacher_outputs, "sentence_embedding")
        if self.alignment.intra_modal_weight:
            scores = self.ranking_loss.student_scores(texts[0], texts[1])
            losses["intra_modal_alignment"] = self.alignment.intra_modal_weight * self.intra_modal_term(
                scores, teacher_features
            )
        if self.alignment.cross_modal_weight:
            losses["cross_modal_alignment"] = self.alignment.cross_modal_weight * self.cross_modal_term(
                texts[0], images, teacher_features
            )
        if self.text_aligner is not None and self.image_aligner is not None:
            losses["consistency"] = self.consistency.weight * self.consistency_term(
                self.text_aligner(texts[0]), self.image_aligner(images)
            )
        if self.text_projection is not None and self.image_projection is not None:
            losses["image_grounding"] = self.image_grounding.weight * self.image_grounding_term(
                [self.text_projection(embedding) for embedding in pooled], self.image_projection(images), images
            )
        if self.token_grounding.weight:
            token_views = [self.mixed_teacher_outputs(teacher_outputs, "token_embeddings", view) for view in range(2)]
            mask = teacher_outputs[0][0]["attention_mask"][:, 1:]
            losses["token_grounding"] = self.token_grounding.weight * self.token_grounding_term(
                [tokens[:, 1:] for tokens in token_views], texts[0], mask
            )
        return losses

    def mixed_teacher_outputs(self, teacher_outputs: list[list[dict[str, Tensor]]], key: str, view: int = 0) -> Tensor:
        r"""The teachers' outputs ``key`` of one view mixed by the ranking loss's teacher weights, :math:`\sum_k w_k
        T_k(x)`; a ValueError naming the shapes if they differ.

        Args:
            teacher_outputs: every teacher's output of every view, ``[teacher][view]``.
            key: the output, ``"sentence_embedding"`` (B, d) or ``"token_embeddings"`` (B, L, d).
            view: which view.
        """
        tensors = [columns[view][key] for columns in teacher_outputs]
        shapes = [tuple(tensor.shape) for tensor in tensors]
        if len(set(shapes)) > 1:
            raise ValueError(f"DALRLoss mixes the teachers' {key}, which needs equal shapes, got {shapes}.")
        weights = self.ranking_loss.teacher_weights
        return torch.stack([weight * tensor for weight, tensor in zip(weights, tensors, strict=True)]).sum(dim=0)

    def soft_label_kl(self, logits: Tensor, soft_labels: Tensor) -> Tensor:
        """:func:`soft_label_kl` at the KL temperatures of ``alignment`` (float32 at least).

        Args:
            logits: the student's scores (B, n).
            soft_labels: the similarities they are aligned with (B, n).
        """
        return soft_label_kl(logits, soft_labels, self.alignment.temperature, self.alignment.target_temperature)

    def intra_modal_term(self, student_scores: Tensor, teacher_features: Tensor) -> Tensor:
        r""":math:`\mathcal{L}_{IMA}`, unweighted: the student's in-batch logits aligned with the cosines of the
        teachers' mixed embeddings (float32 at least).

        Args:
            student_scores: the student's in-batch logits :math:`s` (B, B).
            teacher_features: the teachers' mixed embeddings of the captions (B, d).
        """
        with float32_math(student_scores, teacher_features) as (student_scores, teacher_features):
            teacher_features = F.normalize(teacher_features, dim=-1)
            return self.soft_label_kl(student_scores, teacher_features @ teacher_features.T)

    def cross_modal_term(self, texts: Tensor, images: Tensor, teacher_features: Tensor) -> Tensor:
        r""":math:`\mathcal{L}_{CMA}`, unweighted: the student's caption-to-image logits aligned, image-wise, with
        CLIP's image similarities and, caption-wise, with the teachers' similarities (float32 at least).

        Args:
            texts: the student's caption vectors :math:`z^{(1)}` (B, D).
            images: the CLIP image features (B, D).
            teacher_features: the teachers' mixed embeddings of the captions (B, d).
        """
        with float32_math(texts, images, teacher_features) as (texts, images, teacher_features):
            logits = self.ranking_loss.student_scores(texts, images)  # the student's logits, against the images
            images = F.normalize(images, dim=-1)
            teacher_features = F.normalize(teacher_features, dim=-1)
            image_term = self.soft_label_kl(logits.T, images @ images.T)
            text_term = self.soft_label_kl(logits, teacher_features @ teacher_features.T)
            return (image_term + text_term) / 2

    def consistency_term(self, texts: Tensor, images: Tensor) -> Tensor:
        r""":math:`\mathcal{L}_{cons}`, unweighted, of the aligned captions and images, each caption mismatched with
        another caption's image by ``consistency.mismatch`` (float32 at least).

        Args:
            texts: the aligned captions (B, c).
            images: the aligned images (B, c).
        """
        with float32_math(texts, images) as (texts, images):
            if self.consistency.mismatch == "released_roll":
                mismatched = images.roll(RELEASED_ROLL, dims=0)
            else:
                order = torch.randperm(len(images), device=images.device)  # one cycle through a random order
                mismatched = torch.empty_like(images)
                mismatched[order] = images[order.roll(1)]
            return consistency_loss(texts, images, mismatched, self.consistency.margin)

    def image_grounding_term(self, text_views: list[Tensor], projected_images: Tensor, images: Tensor) -> Tensor:
        r""":math:`\mathcal{L}_{cross}`, unweighted: KDMCSE's grounding term
        (:func:`~sbert_nonling.losses.teacher_guided_align.teacher_guided_grounding`) of each view's projected
        captions against the projected images, the margin adapted by CLIP's image similarities, averaged over the
        views (float32 at least).

        Args:
            text_views: each view's captions after the text projection (B, p).
            projected_images: the images after the image projection (B, p).
            images: the CLIP image features (B, D), for the image similarities.
        """
        with float32_math(projected_images, images, *text_views) as (projected_images, images, *text_views):
            images = F.normalize(images, dim=-1)
            projected_images = F.normalize(projected_images, dim=-1)
            margin, temperature = self.image_grounding.margin, self.image_grounding.temperature
            terms = [
                teacher_guided_grounding(
                    F.normalize(view, dim=-1), projected_images, margin, temperature, images @ images.T
                )
                for view in text_views
            ]
            return torch.stack(terms).mean()

    def token_grounding_term(self, token_views: list[Tensor], texts: Tensor, mask: Tensor) -> Tensor:
        r""":math:`\mathcal{L}_{g2l}`, unweighted: :func:`token_sentence_info_nce` of the teachers' mixed token states
        of each view (without [CLS]), normalised by ``token_grounding.normalization``, against the student's
        :math:`z^{(1)}` at the ranking loss's temperature, averaged over the views (float32 at least).

        Args:
            token_views: the teachers' mixed token states of each view (B, L, d), [CLS] left out.
            texts: the student's caption vectors :math:`z^{(1)}` (B, d).
            mask: the tokens' attention mask (B, L), [CLS] left out.
        """
        axis = -1 if self.token_grounding.normalization == "feature" else 1
        if token_views[0].shape[-1] != texts.shape[-1]:
            raise ValueError(
                f"DALRLoss's token grounding compares the teachers' token states (width {token_views[0].shape[-1]}) "
                f"with the student's embeddings (width {texts.shape[-1]}): they must have the same width."
            )
        with float32_math(texts, *token_views) as (texts, *token_views):
            terms = [
                token_sentence_info_nce(F.normalize(tokens, dim=axis), texts, mask, self.ranking_loss.temperature)
                for tokens in token_views
            ]
            return torch.stack(terms).mean()

    def get_config_dict(self) -> dict[str, Any]:
        return {
            **super().get_config_dict(),
            "alignment": asdict(self.alignment),
            "consistency": asdict(self.consistency),
            "image_grounding": asdict(self.image_grounding),
            "token_grounding": asdict(self.token_grounding),
            "ranking_loss": self.ranking_loss.get_config_dict(),
        }
