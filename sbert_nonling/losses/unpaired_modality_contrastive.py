"""Contrastive loss on a batch of one non-linguistic modality (VisualCSE / AudioCSE's image or audio task)."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import ClassVar

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import all_gather, all_gather_with_grad, get_rank
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.choices import ContrastiveMode, TrainingHead
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.views import forward_views

MODES: tuple[str, ...] = typing.get_args(ContrastiveMode)


class UnpairedModalityContrastiveLoss(LossConfig, nn.Module):
    config_keys: ClassVar[tuple[str, ...]] = ("mode", "temperature", "training_head", "gather_across_devices")
    bibtex_keys: ClassVar[tuple[str, ...]] = ("jian2022nonlinguistic", "khosla2020supcon")

    def __init__(
        self,
        model: SentenceTransformer,
        mode: ContrastiveMode = "supcon",
        temperature: float = 0.07,
        training_head: TrainingHead = "mlp",
        gather_across_devices: bool = False,
    ) -> None:
        r"""Contrastive loss on two views of a batch of images (or audio clips), computed by the same model that
        encodes text: VisualCSE / AudioCSE train one transformer on SimCSE text batches and on these batches, with
        no pairing between the two.

        Each of the :math:`N` inputs has two views; their embeddings (after the training-only head :math:`g`, a
        ``Linear(h, h) + Tanh`` on the pooled [CLS] vector) are L2-normalised into :math:`z_1 \dots z_{2N}`.

        - ``"supcon"`` (Khosla et al., 2020, :math:`\mathcal{L}^{sup}_{out}`, Eq. 2): every sample with the same label
          is a positive,

          .. math::

              \mathcal{L} = \frac{1}{2N} \sum_{i=1}^{2N} \frac{-1}{|P(i)|} \sum_{p \in P(i)}
                  \log \frac{e^{z_i \cdot z_p / \tau}}{\sum_{a \ne i} e^{z_i \cdot z_a / \tau}}

          with :math:`P(i)` the other samples sharing :math:`i`'s label (its own second view included).
        - ``"simclr"`` (Chen et al., 2020, NT-Xent): the same with every input its own class (no labels needed).
        - ``"released_label_rank"``: **reproduction only**, the objective of VisualCSE's released code: cross-entropy
          over the :math:`N \times N` matrix :math:`z^{(1)}_i \cdot z^{(2)}_j / \tau` whose target column for row
          :math:`i` is the rank of :math:`i`'s label among the batch's sorted distinct labels (see docs/visualcse.md).

        The normalised embeddings, logits and softmax are computed in float32 under autocast (docs/reliability.md).

        Args:
            model: the SentenceTransformer being trained (its ModalityRouter routes the images / audio).
            mode: ``"supcon"`` (default), ``"simclr"`` or ``"released_label_rank"``.
            temperature: :math:`\tau`; 0.07 as in SupCon and VisualCSE.
            training_head: ``"mlp"`` (the paper's image MLP, owned by this loss, never saved with the model) or
                ``"none"``.
            gather_across_devices: under DDP, the views of every process are candidates (with gradients).

        References:
            - Jian, Gao, Vosoughi. Non-Linguistic Supervision for Contrastive Learning of Sentence Embeddings,
              NeurIPS 2022, Eq. 1 (L = L_text + w L_image) and Algorithm 1. https://arxiv.org/abs/2209.09433
            - Khosla et al., Supervised Contrastive Learning, NeurIPS 2020, Eq. 2. https://arxiv.org/abs/2004.11362
            - Chen et al., A Simple Framework for Contrastive Learning of Visual Representations, ICML 2020.

        Inputs:
            +------------------------------------+------------------+
            | Inputs                             | Labels           |
            +====================================+==================+
            | (view 1, view 2) of images / audio | class (supcon)   |
            +------------------------------------+------------------+
            | (view 1, view 2) of images / audio | none (simclr)    |
            +------------------------------------+------------------+

            Two augmented images (``sbert_nonling.data.images.two_view_transform``) or the same audio clip twice.

        Recommendations:
            - Train it next to a text loss with :class:`sbert_nonling.training.UnpairedModalityTrainer` (one optimizer
              and learning rate per modality, as the paper). For paired text <-> image data use MultimodalAlignLoss.

        Example:
            ::

                from sbert_nonling import ImagePatchEmbed, UnpairedModalityContrastiveLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                # a random patch embedding; e.g. ImagePatchEmbed.from_vit("google/vit-base-patch16-224-in21k")
                front_end = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=32)
                model = build_sentence_model(str(encoder), front_ends={"image": front_end})
                loss = UnpairedModalityContrastiveLoss(model, mode="supcon", temperature=0.07)
        """
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} must be one of {list(MODES)}.")
        if temperature <= 0:
            raise ValueError(f"temperature={temperature!r} must be positive (VisualCSE uses 0.07).")
        self.model = model
        self.head = make_training_head(training_head, embedding_dimension(model))
        self.mode = mode
        self.temperature = temperature
        self.training_head = training_head
        self.gather_across_devices = gather_across_devices

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        embeddings = [output["sentence_embedding"] for output in forward_views(self.model, sentence_features)]
        if len(embeddings) != 2:
            raise ValueError(f"{type(self).__name__} expects two view columns, got {len(embeddings)}.")
        return self.compute_loss_from_embeddings([self.head(embedding) for embedding in embeddings], labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss on the two views' embeddings (after the head), computed in float32 under autocast.

        Args:
            embeddings: the two views' embeddings, (B, h) each.
            labels: the class of each item (supcon), or None (simclr).
        """
        batch_size, device = embeddings[0].shape[0], embeddings[0].device
        if self.mode == "simclr":
            labels = torch.arange(batch_size, device=device)
            if self.gather_across_devices:
                labels = labels + get_rank() * batch_size
        elif labels is None:
            raise ValueError(f"mode={self.mode!r} needs a label column (class ids); use mode='simclr' without labels.")
        labels = torch.as_tensor(labels, device=device).reshape(-1)
        if labels.shape[0] != batch_size:
            raise ValueError(
                f"Got {labels.shape[0]} labels for a batch of {batch_size} inputs; expected one per input."
            )
        with float32_math(*embeddings) as embeddings:
            view_1, view_2 = (F.normalize(embedding, dim=-1) for embedding in embeddings)  # (N, d) each
            if self.mode == "released_label_rank":
                return self._released_label_rank(view_1, view_2, labels)
            return self._supcon(torch.cat([view_1, view_2]), torch.cat([labels, labels]))

    def _supcon(self, anchors: Tensor, anchor_labels: Tensor) -> Tensor:
        candidates, candidate_labels, offset = anchors, anchor_labels, 0
        if self.gather_across_devices:
            candidates = all_gather_with_grad(anchors)
            candidate_labels = all_gather(anchor_labels)
            offset = get_rank() * anchors.shape[0]
        logits = anchors @ candidates.T / self.temperature  # (2N, 2N * world)
        rows = torch.arange(anchors.shape[0], device=anchors.device)
        not_self = torch.ones_like(logits, dtype=torch.bool)
        not_self[rows, rows + offset] = False
        log_prob = logits - torch.logsumexp(logits.masked_fill(~not_self, float("-inf")), dim=1, keepdim=True)
        positives = (anchor_labels[:, None] == candidate_labels[None, :]) & not_self
        return -((log_prob * positives).sum(1) / positives.sum(1)).mean()

    def _released_label_rank(self, view_1: Tensor, view_2: Tensor, labels: Tensor) -> Tensor:
        if self.gather_across_devices:
            view_2 = all_gather_with_grad(view_2)
        targets = torch.searchsorted(torch.unique(labels), labels)  # rank of each label among the sorted distinct ones
        return F.cross_entropy(view_1 @ view_2.T / self.temperature, targets)
