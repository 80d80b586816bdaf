"""Grounding sentences in their paired images: MCSE's and MACD's cross-modal contrastive terms (plus SimCSE)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Literal

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import all_gather_with_grad, get_rank
from torch import Tensor, nn

from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.util.deprecation import renamed_argument
from sbert_nonling.util.heads import TrainingHead, embedding_dimension, make_training_head
from sbert_nonling.util.precision import float32_math
from sbert_nonling.util.views import forward_views

logger = logging.getLogger(__name__)

Direction = Literal["text_to_image", "symmetric"]
#: The head kinds a projection into the shared space can have (a head that maps to another width).
PROJECTION_HEADS: tuple[str, ...] = ("mlp", "linear")


def info_nce(logits: Tensor, offset: int = 0) -> Tensor:
    """Cross-entropy of each row of ``logits`` (N, M) against column ``offset + row`` (its paired item)."""
    return F.cross_entropy(logits, torch.arange(logits.shape[0], device=logits.device) + offset)


def damsm_scores(words: Tensor, word_mask: Tensor, regions: Tensor, gammas: tuple[float, float, float]) -> Tensor:
    """DAMSM matching scores (AttnGAN, Xu et al. 2018, Eq. 7-10) of every text i against every image j: (B_t, B_i).

    For each word t of text i, attention over the regions r of image j: alpha = softmax_r(gamma1 * cos(e_t, v_r)),
    context c_t = sum_r alpha v_r; relevance cos(c_t, e_t); text-image score
    gamma3 * log(sum_t exp(gamma2 * cos(c_t, e_t)))^(1 / gamma2) over the (unpadded) words.

    Computed in float32 under autocast (cosines, attention softmax, the exp-sum over words); the scores are float32.
    """
    gamma1, gamma2, gamma3 = gammas
    with float32_math(words, regions) as (words, regions):
        words, regions = F.normalize(words, dim=-1), F.normalize(regions, dim=-1)
        similarity = torch.einsum("itd,jrd->ijtr", words, regions)  # (B_t, B_i, T, R)
        attention = torch.softmax(gamma1 * similarity, dim=-1)
        # cos(c_t, e_t) without building the (B_t, B_i, T, D) contexts: with unit e_t and v_r,
        # c_t . e_t = sum_r alpha_r cos(e_t, v_r) and |c_t|^2 = alpha^T (V V^T) alpha.
        dot = (attention * similarity).sum(dim=-1)  # (B_t, B_i, T)
        gram = regions @ regions.transpose(1, 2)  # (B_i, R, R)
        norm = torch.einsum("ijtr,jrs,ijts->ijt", attention, gram, attention).clamp_min(0).sqrt()
        relevance = dot / norm.clamp_min(1e-8)  # (B_t, B_i, T); F.cosine_similarity's eps
        relevance = (gamma2 * relevance).masked_fill(~word_mask[:, None, :].bool(), float("-inf"))
        return gamma3 * torch.logsumexp(relevance, dim=-1) / gamma2


class MultimodalAlignLoss(nn.Module):
    def __init__(
        self,
        model: SentenceTransformer,
        image_dimension: int | None = None,
        text_loss: SimCSELoss | None = None,
        weight: float = 0.01,
        direction: Direction = "text_to_image",
        temperature: float = 0.05,
        projection_dimension: int | None = None,
        projection_head: TrainingHead | None = None,
        local_weight: float = 0.0,
        gammas: tuple[float, float, float] = (1.0, 5.0, 10.0),
        image_encoder: nn.Module | SentenceTransformer | None = None,
        gather_across_devices: bool = False,
        *,
        image_dim: int | None = None,
        projection_dim: int | None = None,
        head_activation: str | None = None,
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

        with :math:`g_t` = Linear(h, 256) + Tanh, :math:`g_v` = Linear(d_img, 256) + Tanh, :math:`\tau'` = 0.05.
        ``direction="symmetric"`` averages the text -> image and image -> text cross-entropies (MACD's global loss:
        cosine x 10, i.e. :math:`\tau'` = 0.1, Linear heads to 768 with ``projection_head="linear"``). The optional
        local term (``local_weight`` :math:`\mu` > 0, needs region features, e.g. a 7 x 7 grid, in the label
        column) is MACD's DAMSM word <-> region matching with gammas (1, 5, 10), both directions.

        The loss returns its terms as a dict (``simcse``, ``grounding``, ``local``), which the trainer sums and logs.
        Under autocast the heads run in half precision and everything after them in float32: the cosines, logits /
        :math:`\tau'` and cross-entropies, and DAMSM's attention softmax and exp-sum over words (:func:`damsm_scores`).

        Args:
            model: the SentenceTransformer being trained (pooling must give the [CLS] vector the paper grounds).
            image_dimension: width of the image features (2048 ResNet-50, 512 CLIP ViT-B/32, 1280 EfficientNet-Lite0).
            text_loss: the SimCSE loss of the text batches; share it so its MLP head is shared, as in MCSE. None
                trains the grounding terms only (MACD).
            weight: :math:`\lambda` (MCSE: 0.01 wiki + captions, 0.05 captions only).
            direction: ``"text_to_image"`` (MCSE) or ``"symmetric"`` (MACD).
            temperature: :math:`\tau'`.
            projection_dimension: shared-space width (default 256 as MCSE; MACD 768).
            projection_head: kind of the two projection heads (:func:`~sbert_nonling.util.heads.make_training_head`):
                ``"mlp"``, Linear + Tanh (MCSE, the default), or ``"linear"`` (MACD).
            image_dim, projection_dim, head_activation: deprecated names of ``image_dimension``,
                ``projection_dimension`` and ``projection_head`` (``"tanh"`` -> ``"mlp"``, ``"none"`` -> ``"linear"``),
                accepted with a FutureWarning.
            local_weight: :math:`\mu`, weight of the DAMSM term (0 disables it).
            gammas: DAMSM's (attention sharpness, word aggregation, scale).
            image_encoder: a frozen image encoder run inside the loss (under no_grad, never optimised or saved): a
                :class:`~sbert_nonling.modules.FrozenImageEncoder`, any torch module mapping pixels
                (B, 3, H, W) to (B, d) vectors or (B, d, h, w) maps, or a sentence-transformers image model. The label
                column then holds the images as uint8 pixels (``caption_image_dataset``) instead of features.
            gather_across_devices: use every process's images as negatives (DDP).

        References:
            - Zhang et al., MCSE: Multimodal Contrastive Learning of Sentence Embeddings, NAACL 2022, Eq. 3-5.
              https://arxiv.org/abs/2204.10931
            - Cui, Zheng, Wang. Unsupervised Natural Language Inference via Decoupled Multimodal Contrastive Learning
              (MACD), EMNLP 2020.
            - Xu et al., AttnGAN, CVPR 2018 (DAMSM, Eq. 7-11).

        Requirements:
            1. Caption batches: (caption, caption) pairs with the image's features as the label.
            2. Precomputed features from a frozen encoder (``sbert-nonling features``) -- the paper's way.

        Inputs:
            +------------------------------+----------------------------------------------------+
            | Texts                        | Labels                                             |
            +==============================+====================================================+
            | (caption, same caption)      | image features (d,) or region features (R, d)      |
            +------------------------------+----------------------------------------------------+

        Relations:
            - The text -> image term is :class:`~sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss`
              between projected captions and projected image features; it adds the training-only heads and the
              two-view averaging. Heads are owned by the loss and never exported.

        Example:
            ::

                from sbert_nonling import MultimodalAlignLoss, SimCSELoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."], hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                simcse = SimCSELoss(model)                                # text batches
                mcse = MultimodalAlignLoss(model, image_dimension=2048, text_loss=simcse, weight=0.01)  # caption batches
        """
        super().__init__()
        owner = type(self).__name__
        image_dimension = renamed_argument(owner, "image_dim", image_dim, "image_dimension", image_dimension)
        projection_dimension = renamed_argument(owner, "projection_dim", projection_dim, "projection_dimension", projection_dimension)
        projection_head = renamed_argument(
            owner, "head_activation", head_activation, "projection_head", projection_head, {"tanh": "mlp", "none": "linear"}
        )
        projection_dimension = 256 if projection_dimension is None else projection_dimension
        projection_head = "mlp" if projection_head is None else projection_head
        if image_dimension is None:
            raise ValueError(f"{owner} needs image_dimension, the width of the image features (e.g. 2048 for ResNet-50).")
        if direction not in ("text_to_image", "symmetric"):
            raise ValueError(f"direction={direction!r} must be 'text_to_image' or 'symmetric'.")
        if projection_head not in PROJECTION_HEADS:
            raise ValueError(f"projection_head={projection_head!r} must be one of {list(PROJECTION_HEADS)}.")
        if temperature <= 0 or image_dimension <= 0 or projection_dimension <= 0:
            raise ValueError(
                "temperature, image_dimension and projection_dimension must be positive, got "
                f"{temperature}, {image_dimension}, {projection_dimension}."
            )
        self.model = model
        self.image_dimension = image_dimension
        self.text_loss = text_loss
        self.weight = weight
        self.direction = direction
        self.temperature = temperature
        self.projection_dimension = projection_dimension
        self.projection_head = projection_head
        self.local_weight = local_weight
        gamma1, gamma2, gamma3 = gammas  # a list from a saved config is accepted too
        self.gammas = (gamma1, gamma2, gamma3)
        self.gather_across_devices = gather_across_devices
        if image_encoder is not None:
            image_encoder.eval().requires_grad_(False)
        self._image_encoder = [image_encoder]  # a list: not a registered sub-module, so never optimised or saved
        hidden_size = embedding_dimension(model)
        self.text_head = make_training_head(projection_head, hidden_size, projection_dimension, name="projection_head")
        self.image_head = make_training_head(projection_head, image_dimension, projection_dimension, name="projection_head")
        if local_weight:
            self.word_head = nn.Linear(hidden_size, projection_dimension)
            self.region_head = nn.Linear(image_dimension, projection_dimension)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> dict[str, Tensor]:
        outputs = forward_views(self.model, sentence_features)  # the caption's dropout views, one forward pass
        return self.compute_loss_from_outputs(outputs, labels)

    def project_text(self, sentence_embeddings: Tensor) -> Tensor:
        """Sentence embeddings (B, hidden) in the shared grounding space (B, projection_dimension), through the text head."""
        return self.text_head(sentence_embeddings)

    def project_images(self, image_features: Tensor) -> Tensor:
        """Image features (B, image_dimension), or region grids (B, regions, image_dimension) averaged first, in the shared
        grounding space (B, projection_dimension), through the image head."""
        return self.image_head(image_features if image_features.ndim == 2 else image_features.mean(dim=1))

    @torch.no_grad()
    def encode_images(self, pixels: Tensor) -> Tensor:
        """Features of uint8 pixel images (B, 3, H, W) from the frozen ``image_encoder``: (B, d), or (B, regions, d)
        when the local term needs regions and the encoder gives a feature map."""
        from sbert_nonling.modules.frozen_image_encoder import NORMALIZE_TRANSFORM, FrozenImageEncoder

        encoder = self._image_encoder[0]
        assert encoder is not None  # only called with an image_encoder
        if isinstance(encoder, SentenceTransformer):
            from torchvision.transforms.v2.functional import to_pil_image

            embeddings = encoder.encode([to_pil_image(image.cpu()) for image in pixels], convert_to_tensor=True)
            return embeddings.clone().to(pixels.device)  # encode() returns inference-mode tensors autograd refuses
        device = next(encoder.parameters()).device
        if pixels.dtype == torch.uint8 and not isinstance(encoder, FrozenImageEncoder):  # it normalises uint8 itself
            pixels = NORMALIZE_TRANSFORM(pixels)
        output = encoder(pixels.to(device))
        if isinstance(output, tuple):  # FrozenImageEncoder: (global, regions)
            return output[1] if self.local_weight else output[0]
        if output.ndim == 4:
            regions = output.flatten(2).transpose(1, 2)
            return regions if self.local_weight else regions.mean(dim=1)
        return output

    def check_image_features(self, labels: Tensor | None, batch_size: int) -> Tensor:
        """The image features of a batch: the label column, or the frozen encoder's output on the label's pixels."""
        if self._image_encoder[0] is not None:
            if labels is None or labels.ndim != 4:
                shape = None if labels is None else tuple(labels.shape)
                raise ValueError(f"With an image_encoder the label column must hold images (B, 3, H, W), got {shape}.")
            labels = self.encode_images(labels)
        if labels is None or labels.ndim not in (2, 3):
            shape = None if labels is None else tuple(labels.shape)
            raise ValueError(f"{type(self).__name__} needs image features (B, d) or (B, regions, d) as the label column, got {shape}.")
        if labels.shape[0] != batch_size:
            raise ValueError(f"Got image features for {labels.shape[0]} images but {batch_size} captions; one image per caption.")
        if labels.shape[-1] != self.image_dimension:
            raise ValueError(f"Image features have dimension {labels.shape[-1]}, but the loss was built with image_dimension={self.image_dimension}.")
        if self.local_weight and labels.ndim != 3:
            raise ValueError("local_weight > 0 needs region features (B, regions, d) in the label column.")
        return labels.float()

    def compute_loss_from_outputs(self, outputs: list[dict[str, Tensor]], labels: Tensor) -> dict[str, Tensor]:
        """The loss terms from the model outputs of the caption views and the label column (image features, or
        pixels for the ``image_encoder``): for wrappers that run the model themselves (:class:`DistillAnchorLoss`)."""
        image_features = self.check_image_features(labels, outputs[0]["sentence_embedding"].shape[0])
        pooled = [output["sentence_embedding"] for output in outputs]  # (B, h) per view
        losses: dict[str, Tensor] = {}
        if self.text_loss is not None:
            losses["simcse"] = self.text_loss.compute_loss_from_outputs(outputs)
        projected = [self.project_images(image_features), *(self.project_text(view) for view in pooled)]  # (B, p) each
        with float32_math(*projected) as (images, *views):
            images = F.normalize(images, dim=-1)
            candidates, offset = images, 0
            if self.gather_across_devices:
                candidates, offset = all_gather_with_grad(images), get_rank() * images.shape[0]
            grounding = []
            for view in views:
                texts = F.normalize(view, dim=-1)  # (B, p)
                grounding.append(info_nce(texts @ candidates.T / self.temperature, offset))
                if self.direction == "symmetric":
                    text_candidates = all_gather_with_grad(texts) if self.gather_across_devices else texts
                    grounding.append(info_nce(images @ text_candidates.T / self.temperature, offset))
            losses["grounding"] = self.weight * torch.stack(grounding).mean()
        if self.local_weight:
            losses["local"] = self.local_weight * self._local_loss(outputs[0], image_features)
        return losses

    def _local_loss(self, output: dict[str, Tensor], regions: Tensor) -> Tensor:
        words = self.word_head(output["token_embeddings"][:, 1:])  # drop [CLS]
        mask = output["attention_mask"][:, 1:]
        scores = damsm_scores(words, mask, self.region_head(regions), self.gammas)  # (B_t, B_i)
        return (info_nce(scores) + info_nce(scores.T)) / 2

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "image_dimension": self.image_dimension,
            "weight": self.weight,
            "direction": self.direction,
            "temperature": self.temperature,
            "projection_dimension": self.projection_dimension,
            "projection_head": self.projection_head,
            "local_weight": self.local_weight,
            "gammas": list(self.gammas),
            "text_loss": None if self.text_loss is None else self.text_loss.get_config_dict(),
        }

    @property
    def citation(self) -> str:
        return """
@inproceedings{zhang2022mcse,
    title = {{MCSE}: Multimodal Contrastive Learning of Sentence Embeddings},
    author = {Zhang, Miaoran and Mosbach, Marius and Adelani, David and Hedderich, Michael and Klakow, Dietrich},
    booktitle = {North American Chapter of the Association for Computational Linguistics (NAACL)},
    year = {2022},
    url = {https://arxiv.org/abs/2204.10931}
}
"""
