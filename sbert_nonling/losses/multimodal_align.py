"""Grounding sentences in their paired images: MCSE's and MACD's cross-modal contrastive terms (plus SimCSE)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.losses.damsm import DAMSMLoss, check_image_features
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.util.choices import Direction, TrainingHead
from sbert_nonling.util.heads import embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.similarity import cosine_similarity
from sbert_nonling.util.views import forward_views

#: MultipleNegativesRankingLoss's directions for each grounding direction (queries: captions; documents: images).
MNRL_DIRECTIONS: dict[str, tuple[Any, ...]] = {
    "text_to_image": ("query_to_doc",),
    "symmetric": ("query_to_doc", "doc_to_query"),
}


class MultimodalAlignLoss(LossConfig, nn.Module):
    config_keys = (
        "image_dimension",
        "weight",
        "direction",
        "temperature",
        "projection_dimension",
        "projection_head",
        "local_weight",
    )
    bibtex_keys = ("zhang2022mcse",)

    def __init__(
        self,
        model: SentenceTransformer,
        image_dimension: int,
        text_loss: SimCSELoss | None = None,
        weight: float = 0.01,
        direction: Direction = "text_to_image",
        temperature: float = 0.05,
        projection_dimension: int = 256,
        projection_head: TrainingHead = "mlp",
        local_weight: float = 0.0,
        gammas: tuple[float, float, float] = (1.0, 5.0, 10.0),
        gather_across_devices: bool = False,
    ) -> None:
        r"""SimCSE plus a grounding loss between each sentence and its *paired* image, in a shared space reached
        through training-only projection heads (MCSE; MACD's global and local terms as options).

        For a batch of :math:`N` captions with dropout views :math:`h^{(1)}, h^{(2)}` (the model's pooled [CLS],
        before SimCSE's MLP) and image features :math:`v` (precomputed, frozen):

        .. math::

            t^{(k)}_i = \frac{g_t(h^{(k)}_i)}{\lVert g_t(h^{(k)}_i) \rVert}, \quad
            u_j = \frac{g_v(v_j)}{\lVert g_v(v_j) \rVert}, \quad
            \ell^{(k)}_i = -\log \frac{e^{t^{(k)}_i \cdot u_i / \tau'}}{\sum_j e^{t^{(k)}_i \cdot u_j / \tau'}}

            \mathcal{L} = \mathcal{L}_{SimCSE} + \lambda \cdot \frac{1}{2N} \sum_{k=1}^{2} \sum_i \ell^{(k)}_i
                \;[+ \text{image} \to \text{text term}] \;[+ \mu \cdot \mathcal{L}_{local}]

        with :math:`g_t` = Linear(h, 256) + Tanh, :math:`g_v` = Linear(d_img, 256) + Tanh, :math:`\tau'` = 0.05 (MCSE).
        ``direction="symmetric"`` adds the image -> text direction (MACD's global loss); the local term is
        MACD's :class:`~sbert_nonling.losses.damsm.DAMSMLoss` (see docs/mcse_macd.md). The terms come back as a dict
        (``simcse``, ``grounding``, ``local``), which the trainer sums and logs; float32 after the heads under
        autocast.

        Args:
            model: the SentenceTransformer being trained (pooling must give the [CLS] vector the paper grounds).
            image_dimension: width of the image features (2048 ResNet-50, 512 CLIP ViT-B/32, 1280 EfficientNet-Lite0).
            text_loss: the SimCSE loss of the text batches; share it so its MLP head is shared, as in MCSE. None
                trains the grounding terms only (MACD).
            weight: :math:`\lambda` (MCSE: 0.01 wiki + captions, 0.05 captions only).
            direction: ``"text_to_image"`` (MCSE) or ``"symmetric"`` (MACD).
            temperature: :math:`\tau'` (scale = 1 / temperature of the ranking loss: 0.05 is scale 20).
            projection_dimension: shared-space width (MCSE: 256; MACD: 768).
            projection_head: kind of the two projection heads: ``"mlp"``, Linear + Tanh (MCSE), or ``"linear"`` (MACD).
            local_weight, gammas: :math:`\mu`, the weight of the DAMSM term (0 disables it), and DAMSM's gammas.
            gather_across_devices: use every process's captions and images as negatives (DDP), with gradients.

        References:
            - Zhang et al., MCSE: Multimodal Contrastive Learning of Sentence Embeddings, NAACL 2022, Eq. 3-5.
              https://arxiv.org/abs/2204.10931
            - Cui, Zheng, Wang. MACD, EMNLP 2020.

        Inputs:
            +------------------------------+----------------------------------------------------+
            | Texts                        | Labels                                             |
            +==============================+====================================================+
            | (caption, same caption)      | image features (d,) or region features (R, d)      |
            +------------------------------+----------------------------------------------------+

            Image features are precomputed on the data side by a frozen encoder (``sbert-nonling features``).

        Relations:
            - The grounding term is
              :class:`~sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss`
              (``grounding_loss``) between the projected captions (queries) and images (documents), once per view.

        Example:
            ::

                from sbert_nonling import MultimodalAlignLoss, SimCSELoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                simcse = SimCSELoss(model)                                # text batches
                # caption batches
                mcse = MultimodalAlignLoss(model, image_dimension=2048, text_loss=simcse, weight=0.01)
        """
        if direction not in MNRL_DIRECTIONS:
            raise ValueError(f"direction={direction!r} must be one of {list(MNRL_DIRECTIONS)}.")
        if temperature <= 0 or image_dimension <= 0 or projection_dimension <= 0:
            raise ValueError(
                "temperature, image_dimension and projection_dimension must be positive, got "
                f"{temperature}, {image_dimension}, {projection_dimension}."
            )
        super().__init__()
        self.model = model
        self.text_loss = text_loss
        # cosine_similarity, not sentence-transformers' cos_sim: the same numbers without the Tensor.to_dense() whose
        # gradient a compiled graph drops on torch 2.11 / 2.12 (sbert_nonling/util/similarity.py)
        self.grounding_loss = MultipleNegativesRankingLoss(
            model,
            scale=1.0 / temperature,
            similarity_fct=cosine_similarity,
            gather_across_devices=gather_across_devices,
            directions=MNRL_DIRECTIONS[direction],
            partition_mode="per_direction",
        )
        self.weight = weight
        self.direction = direction
        self.temperature = temperature
        self.gather_across_devices = gather_across_devices
        self.text_head = make_training_head(
            projection_head, embedding_dimension(model), projection_dimension, name="projection_head"
        )
        self.image_head = make_training_head(
            projection_head, image_dimension, projection_dimension, name="projection_head"
        )
        self.image_dimension = image_dimension
        self.projection_dimension = projection_dimension
        self.projection_head = projection_head
        self.local_weight = local_weight
        self.local_loss = DAMSMLoss(model, image_dimension, projection_dimension, gammas) if local_weight else None

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None) -> dict[str, Tensor]:
        return self.compute_loss_from_outputs(
            forward_views(self.model, sentence_features), labels
        )  # both views, one forward

    def project_text(self, sentence_embeddings: Tensor) -> Tensor:
        """Sentence embeddings (B, hidden) in the shared grounding space (B, projection_dimension), through the text
        head.

        Args:
            sentence_embeddings: the pooled sentence embeddings (B, hidden).
        """
        return self.text_head(sentence_embeddings)

    def project_images(self, image_features: Tensor) -> Tensor:
        """Image features (B, image_dimension), or region grids (B, regions, image_dimension) averaged first, through
        the image head into the shared grounding space (B, projection_dimension).

        Args:
            image_features: global features (B, image_dimension) or region grids (B, regions, image_dimension).
        """
        return self.image_head(image_features if image_features.ndim == 2 else image_features.mean(dim=1))

    def compute_loss_from_outputs(self, outputs: list[dict[str, Tensor]], labels: Tensor | None) -> dict[str, Tensor]:
        """The loss terms from the model outputs of the caption views and the image features, for wrappers.

        Args:
            outputs: the model outputs of the caption views.
            labels: the image features of the batch.
        """
        batch_size = outputs[0]["sentence_embedding"].shape[0]
        image_features = check_image_features(
            type(self).__name__, labels, batch_size, self.image_dimension, regions=self.local_loss is not None
        )
        losses: dict[str, Tensor] = {}
        if self.text_loss is not None:
            losses["simcse"] = self.text_loss.compute_loss_from_outputs(outputs)
        images = self.project_images(image_features)  # (B, p)
        views = [self.grounding_term(self.project_text(output["sentence_embedding"]), images) for output in outputs]
        losses["grounding"] = self.weight * torch.stack(views).mean()
        if self.local_loss is not None:
            losses["local"] = self.local_weight * self.local_loss.compute_loss_from_outputs(outputs, image_features)
        return losses

    def grounding_term(self, texts: Tensor, images: Tensor) -> Tensor:
        """The ranking loss between projected captions (queries) and images (documents), (B, p) each, as a float32
        scalar, computed in float64: the ranking loss subtracts the positive logit from the row's logsumexp, two
        numbers near the scale (20), which float32 keeps only to about 1e-6, large on a near-zero loss.

        Args:
            texts: projected captions (B, p).
            images: projected images (B, p).
        """
        with float32_math(texts, images) as (texts, images):
            # MultipleNegativesRankingLoss annotates labels as Tensor but never reads them.
            return self.grounding_loss.compute_loss_from_embeddings(
                [texts.double(), images.double()], cast(Tensor, None)
            ).float()

    def get_config_dict(self) -> dict[str, Any]:
        gammas = None if self.local_loss is None else list(self.local_loss.gammas)
        text_loss = None if self.text_loss is None else self.text_loss.get_config_dict()
        return {
            **super().get_config_dict(),
            "gammas": gammas,
            "gather_across_devices": self.gather_across_devices,
            "text_loss": text_loss,
        }
