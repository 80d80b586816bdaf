"""Grounding captions in a frozen CLIP's image and caption embeddings, with the teacher's similarities as soft labels
(KDMCSE's adaptive angular margin and negative filtering)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, get_args

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Pooling
from torch import Tensor, nn

from sbert_nonling.losses.angular_margin import angular_margin_logits
from sbert_nonling.losses.base import LossConfig
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.util.choices import FilterScores
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.views import forward_views

logger = logging.getLogger(__name__)


def teacher_guided_grounding(
    texts: Tensor,
    targets: Tensor,
    margin: float,
    temperature: float,
    soft_labels: Tensor | None = None,
    dropped: Tensor | None = None,
) -> Tensor:
    r"""KDMCSE's grounding term: the cross-entropy of the angular-margin logits of projected captions against their
    projected targets, positives on the diagonal, :math:`\mathrm{CE}\big(\mathrm{arc}_{m, \alpha}(p v^\top) + F,
    \; i\big)` (float32 at least).

    Args:
        texts: the projected captions :math:`p` (B, p), unit length.
        targets: the projected targets :math:`v` (B, p), unit length.
        margin: :math:`m`, the angular margin in radians (KDMCSE: 0.15).
        temperature: :math:`\tau` (0.05).
        soft_labels: the adaptive margin's :math:`\alpha` (B, B), e.g. CLIP's target-target cosines; None for a
            constant margin.
        dropped: the filtered negatives :math:`F` (B, B; True: left out of the softmax), or None.

    Example::

        import torch
        import torch.nn.functional as F
        from sbert_nonling.losses.teacher_guided_align import teacher_guided_grounding

        texts, targets = F.normalize(torch.randn(4, 8), dim=-1), F.normalize(torch.randn(4, 8), dim=-1)
        clip = F.normalize(torch.randn(4, 16), dim=-1)
        loss = teacher_guided_grounding(texts, targets, margin=0.15, temperature=0.05, soft_labels=clip @ clip.T)
    """
    with float32_math(texts, targets) as (texts, targets):
        logits = angular_margin_logits(texts @ targets.T, margin, temperature, soft_labels)
        if dropped is not None:
            logits = logits.masked_fill(dropped, float("-inf"))
        return F.cross_entropy(logits, torch.arange(logits.shape[0], device=logits.device))


class TeacherGuidedAlignLoss(LossConfig, nn.Module):
    config_keys = (
        "clip_dimension",
        "weight",
        "temperature",
        "margin",
        "adaptive_margin",
        "projection_dimension",
        "filter_threshold",
        "filter_scores",
    )
    bibtex_keys = ("nguyen2024kdmcse",)

    def __init__(
        self,
        model: SentenceTransformer,
        clip_dimension: int,
        text_loss: SimCSELoss | None = None,
        weight: float = 0.01,
        temperature: float = 0.05,
        margin: float = 0.15,
        adaptive_margin: bool = True,
        projection_dimension: int = 256,
        filter_threshold: float | None = None,
        filter_scores: FilterScores = "cosine",
    ) -> None:
        r"""KDMCSE's grounding: each caption is pulled towards its image's and its own frozen CLIP embeddings, against
        the batch's other images and captions, with angular-margin logits whose margins and negatives a frozen CLIP
        teacher sets.

        For a batch of :math:`N` captions with dropout views :math:`h^{(1)}, h^{(2)}` (the pooled [CLS], before
        SimCSE's MLP), CLIP image embeddings :math:`a_j` and CLIP caption embeddings :math:`c_j` (precomputed, frozen):

        .. math::

            p^{(k)}_i = \mathrm{norm}\, g(h^{(k)}_i), \quad v_j = \mathrm{norm}\, g_v(a_j), \quad
            t_j = \mathrm{norm}\, g_t(c_j)

            \mathcal{L}_{v} = \frac{1}{2} \sum_{k=1}^{2} \mathrm{CE}\Big(
                \mathrm{arc}_{m, \alpha^{v}}\big(p^{(k)} v^\top\big) + F^{v}, \; i \Big), \quad
            \mathcal{L}_{t} = \frac{1}{2} \sum_{k=1}^{2} \mathrm{CE}\Big(
                \mathrm{arc}_{m, \alpha^{t}}\big(p^{(k)} t^\top\big) + F^{t}, \; i \Big)

            \mathcal{L} = \mathcal{L}_{text} + \lambda \, (\mathcal{L}_{v} + \mathcal{L}_{t})

        with :math:`g, g_v, g_t` = Linear(., 256) + Tanh, and
        :math:`\mathrm{arc}_{m, \alpha}(s)_{ij} = \cos(\arccos s_{ij} - m (1 - \alpha_{ij})) / \tau` on the negatives
        whose angle exceeds :math:`m` (:func:`~sbert_nonling.losses.angular_margin.angular_margin_logits`; positives
        keep :math:`s_{ii} / \tau`). The adaptive margin's soft labels are CLIP's own similarities:
        :math:`\alpha^{v}_{ij} = \cos(a_i, a_j)` for the image targets and :math:`\alpha^{t}_{ij} = \cos(c_i, c_j)`
        for the caption targets, so a negative the teacher finds close to the positive keeps its angle (a likely
        false negative is not pushed harder) while an unrelated one gets the full margin. The filter
        :math:`F_{ij} = -\infty` (off the diagonal, when ``filter_threshold`` is set) drops from the softmax the
        negatives whose CLIP caption-image score exceeds the threshold: :math:`F^{v}_{ij}` scores caption :math:`i`
        with image :math:`j`, :math:`F^{t}_{ij}` image :math:`i` with caption :math:`j`. :math:`\mathcal{L}_{text}`
        is ``text_loss`` on the two views (KDMCSE: SimCSE with a constant angular margin). The terms come back as a
        dict (``simcse``, ``grounding_image``, ``grounding_caption``), which the trainer sums and logs; float32 after
        the heads under autocast.

        Args:
            model: the SentenceTransformer being trained (pooling must give the [CLS] vector the paper grounds).
            clip_dimension: width of the CLIP embeddings (768 for CLIP ViT-L/14, 512 for ViT-B/32).
            text_loss: the SimCSE loss of the text batches; share it so its MLP head is shared, as in KDMCSE. None
                trains the grounding terms only.
            weight: :math:`\lambda` (KDMCSE: 0.01).
            temperature: :math:`\tau` of the grounding logits (0.05).
            margin: :math:`m`, the angular margin in radians (KDMCSE's scripts: 0.15).
            adaptive_margin: scale the margin by :math:`1 - \alpha` (AdapACSE, KDMCSE); False: a constant margin.
            projection_dimension: width of the shared space (256).
            filter_threshold: drop negatives whose teacher caption-image score exceeds it; None keeps every negative
                (KDMCSE's released scripts: the filter is off).
            filter_scores: the filter's score: ``"cosine"`` (the paper) or ``"released_dot_product"``, the raw
                product of the stored CLIP embeddings (the released code, whose threshold is 0.8).

        References:
            - Nguyen et al. KDMCSE: Knowledge Distillation Multimodal Sentence Embeddings with Adaptive Angular margin
              Contrastive Learning. NAACL 2024. https://arxiv.org/abs/2403.17486

        Inputs:
            +------------------------------+-----------------------------------------------------------------+
            | Texts                        | Labels                                                          |
            +==============================+=================================================================+
            | (caption, same caption)      | CLIP embeddings (2, d): the caption's image, then the caption   |
            +------------------------------+-----------------------------------------------------------------+

            The CLIP embeddings are computed once on the data side (``sbert-nonling features --encoder
            clip-vit-large-patch14 --captions FILE``).

        Relations:
            - :class:`~sbert_nonling.losses.MultimodalAlignLoss` is MCSE's grounding: one image target, plain
              InfoNCE, image features of any frozen encoder. This loss adds the caption target and the teacher's
              margins and filter.

        Example:
            ::

                import torch
                from sbert_nonling.losses import SimCSELoss, TeacherGuidedAlignLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                captions = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", captions, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                kdmcse = TeacherGuidedAlignLoss(model, clip_dimension=16, text_loss=SimCSELoss(model, margin=0.15))
                features = [model.tokenize(captions), model.tokenize(captions)]
                clip = torch.randn(2, 2, 16)  # per caption: its image's and its own CLIP embedding
                print({name: float(term) for name, term in kdmcse(features, clip).items()})
        """
        if temperature <= 0 or clip_dimension <= 0 or projection_dimension <= 0:
            raise ValueError(
                "temperature, clip_dimension and projection_dimension must be positive, got "
                f"{temperature}, {clip_dimension}, {projection_dimension}."
            )
        if margin < 0:
            raise ValueError(f"margin={margin!r} must be 0 or a positive angle in radians (KDMCSE: 0.15).")
        if filter_scores not in get_args(FilterScores):
            raise ValueError(f"filter_scores={filter_scores!r} must be one of {list(get_args(FilterScores))}.")
        if filter_threshold is not None and filter_scores == "cosine" and not -1.0 <= filter_threshold <= 1.0:
            raise ValueError(
                f"filter_threshold={filter_threshold!r} must lie in [-1, 1] with filter_scores='cosine' (a threshold "
                "on a cosine)."
            )
        pooling = [module.pooling_mode for module in model.modules() if isinstance(module, Pooling)]
        if pooling and pooling[0] != "cls":
            logger.warning(
                f"TeacherGuidedAlignLoss: the model pools {pooling[0]!r}; KDMCSE is defined on the [CLS] embedding "
                "(build_sentence_model(..., pooling='cls')). It trains on what the model pools."
            )
        super().__init__()
        self.model = model
        self.text_loss = text_loss
        self.clip_dimension = clip_dimension
        self.weight = weight
        self.temperature = temperature
        self.margin = margin
        self.adaptive_margin = adaptive_margin
        self.projection_dimension = projection_dimension
        self.filter_threshold = filter_threshold
        self.filter_scores = filter_scores
        self.text_head = make_training_head("mlp", embedding_dimension(model), projection_dimension)
        self.image_head = make_training_head("mlp", clip_dimension, projection_dimension)
        self.caption_head = make_training_head("mlp", clip_dimension, projection_dimension)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> dict[str, Tensor]:
        return self.compute_loss_from_outputs(forward_views(self.model, sentence_features), labels)

    def project_text(self, sentence_embeddings: Tensor) -> Tensor:
        """Sentence embeddings (B, hidden) in the shared space, unit length (B, projection_dimension).

        Args:
            sentence_embeddings: the pooled sentence embeddings (B, hidden).
        """
        return F.normalize(self.text_head(sentence_embeddings), dim=-1)

    def project_images(self, image_features: Tensor) -> Tensor:
        """CLIP image embeddings (B, clip_dimension) in the shared space, unit length (B, projection_dimension).

        Args:
            image_features: CLIP image embeddings (B, clip_dimension).
        """
        return F.normalize(self.image_head(image_features), dim=-1)

    def compute_loss_from_outputs(self, outputs: list[dict[str, Tensor]], labels: Tensor) -> dict[str, Tensor]:
        """The loss terms from the model outputs of the caption views and the batch's CLIP embeddings.

        Args:
            outputs: the model outputs of the caption views.
            labels: the CLIP embeddings (B, 2, clip_dimension): each caption's image, then the caption.
        """
        batch_size = outputs[0]["sentence_embedding"].shape[0]
        if labels is None or tuple(labels.shape) != (batch_size, 2, self.clip_dimension):
            shape = None if labels is None else tuple(labels.shape)
            raise ValueError(
                f"TeacherGuidedAlignLoss expects CLIP embeddings of shape ({batch_size}, 2, {self.clip_dimension}) "
                f"as labels (each caption's image, then the caption), got {shape}."
            )
        losses: dict[str, Tensor] = {}
        if self.text_loss is not None:
            losses["simcse"] = self.text_loss.compute_loss_from_outputs(outputs)
        images, captions = labels[:, 0], labels[:, 1]
        image_targets = self.project_images(images)  # (B, p)
        caption_targets = F.normalize(self.caption_head(captions), dim=-1)  # (B, p)
        views = [self.project_text(output["sentence_embedding"]) for output in outputs]
        image_margins, caption_margins, image_filter, caption_filter = self.teacher_guidance(images, captions)
        image_terms = [self.grounding_term(view, image_targets, image_margins, image_filter) for view in views]
        caption_terms = [self.grounding_term(view, caption_targets, caption_margins, caption_filter) for view in views]
        losses["grounding_image"] = self.weight * torch.stack(image_terms).mean()
        losses["grounding_caption"] = self.weight * torch.stack(caption_terms).mean()
        return losses

    def teacher_guidance(
        self, images: Tensor, captions: Tensor
    ) -> tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None]:
        """The teacher's soft labels and filters of a batch: the adaptive margins' :math:`\\alpha` of the image and
        caption targets (CLIP image-image and caption-caption cosines; None for a constant margin) and the filters
        (B, B) of the image and caption targets (True: the negative is dropped; None without a threshold).

        Args:
            images: the batch's CLIP image embeddings (B, d).
            captions: the batch's CLIP caption embeddings (B, d).
        """
        with float32_math(images, captions) as (images, captions):
            unit_images, unit_captions = F.normalize(images, dim=-1), F.normalize(captions, dim=-1)
            image_margins = caption_margins = image_filter = caption_filter = None
            if self.adaptive_margin:
                image_margins, caption_margins = unit_images @ unit_images.T, unit_captions @ unit_captions.T
            if self.filter_threshold is not None:
                if self.filter_scores == "cosine":
                    images, captions = unit_images, unit_captions
                off_diagonal = ~torch.eye(images.shape[0], dtype=torch.bool, device=images.device)
                # the image targets' filter: row caption i, column image j; the caption targets': the transpose roles
                image_filter = (captions @ images.T > self.filter_threshold) & off_diagonal
                caption_filter = (images @ captions.T > self.filter_threshold) & off_diagonal
        return image_margins, caption_margins, image_filter, caption_filter

    def grounding_term(
        self, texts: Tensor, targets: Tensor, soft_labels: Tensor | None, dropped: Tensor | None
    ) -> Tensor:
        """:func:`teacher_guided_grounding` of one view's projected captions against the projected targets, at this
        loss's margin and temperature.

        Args:
            texts: one view's projected captions (B, p), unit length.
            targets: the projected targets (B, p), unit length.
            soft_labels: the adaptive margin's :math:`\\alpha` (B, B), or None for a constant margin.
            dropped: the filtered negatives (B, B), or None.
        """
        return teacher_guided_grounding(texts, targets, self.margin, self.temperature, soft_labels, dropped)

    def get_config_dict(self) -> dict[str, Any]:
        text_loss = None if self.text_loss is None else self.text_loss.get_config_dict()
        return {**super().get_config_dict(), "text_loss": text_loss}
