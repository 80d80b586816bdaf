"""DAMSM: captions matched word by word to their images' regions (AttnGAN's attention model, MACD's local term)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from sbert_nonling.losses.base import LossConfig
from sbert_nonling.util.heads import embedding_dimension
from sbert_nonling.util.precision import float32_math


def damsm_scores(words: Tensor, word_mask: Tensor, regions: Tensor, gammas: tuple[float, float, float]) -> Tensor:
    """DAMSM matching scores S(i, j) (AttnGAN Eq. 7-10; formula in :class:`DAMSMLoss`) of every text i against every
    image j, (B_t, B_i), over the unpadded words; float32, also under autocast.

    Args:
        words: projected word embeddings (B_t, T, d).
        word_mask: 1 for a word, 0 for padding (B_t, T).
        regions: projected region features (B_i, R, d).
        gammas: (gamma_1, gamma_2, gamma_3): attention sharpness, word aggregation, score scale.
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


def check_image_features(
    owner: str, labels: Tensor | None, batch_size: int, image_dimension: int, regions: bool
) -> Tensor:
    """The label column of a caption batch as float image features, after checking them: one row per caption, width
    ``image_dimension``, a region grid (B, regions, d) if ``regions``, else that or global vectors (B, d).

    Args:
        owner: the loss's name, named in the errors.
        labels: the batch's label column.
        batch_size: the number of captions in the batch.
        image_dimension: the width the loss was built for.
        regions: whether region grids are required (the word-region term).
    """
    if labels is None or labels.ndim not in ((3,) if regions else (2, 3)):
        expected, shape = (
            "(B, regions, d)" if regions else "(B, d) or (B, regions, d)",
            None if labels is None else tuple(labels.shape),
        )
        raise ValueError(f"{owner} needs image features {expected} as the label column, got {shape}.")
    if labels.shape[0] != batch_size:
        raise ValueError(
            f"Got image features for {labels.shape[0]} images but {batch_size} captions; one image per caption."
        )
    if labels.shape[-1] != image_dimension:
        raise ValueError(
            f"Image features have dimension {labels.shape[-1]}, but {owner} was built with "
            f"image_dimension={image_dimension}."
        )
    return labels.float()


class DAMSMLoss(LossConfig, nn.Module):
    config_keys = ("image_dimension", "projection_dimension")
    bibtex_keys = ("xu2018attngan",)

    def __init__(
        self,
        model: SentenceTransformer,
        image_dimension: int,
        projection_dimension: int = 768,
        gammas: tuple[float, float, float] = (1.0, 5.0, 10.0),
    ) -> None:
        r"""Word <-> region matching of each caption with its image against the other images of the batch: the Deep
        Attentional Multimodal Similarity Model of AttnGAN, MACD's local grounding term.

        Words :math:`e_t` (the caption's token embeddings after [CLS], through a Linear word head) attend over the
        regions :math:`v_r` of image :math:`j` (its region grid through a Linear region head), both L2-normalised:

        .. math::

            \alpha_{tr} = \mathrm{softmax}_r(\gamma_1 \cos(e_t, v_r)), \quad c_t = \sum_r \alpha_{tr} v_r, \quad
            S(i, j) = \gamma_3 \, \frac{1}{\gamma_2} \log \sum_t e^{\gamma_2 \cos(c_t, e_t)}

            \mathcal{L} = \frac{1}{2} \big( \mathrm{CE}(S, \mathrm{diag}) + \mathrm{CE}(S^\top, \mathrm{diag}) \big)

        each caption against the batch's images and each image against its captions (padded words left out), in
        float32 under autocast. The heads are the loss's: training-only, never saved.

        Args:
            model: the SentenceTransformer being trained; its outputs must hold ``token_embeddings`` and
                ``attention_mask`` with a leading [CLS] token, as every encoder here does.
            image_dimension: width of the region features (2048 for a ResNet-50 grid).
            projection_dimension: width of the shared word / region space (MACD: 768).
            gammas: :math:`(\gamma_1, \gamma_2, \gamma_3)`: attention sharpness, word aggregation, scale (MACD's code:
                1, 5, 10).

        References:
            - Xu et al., AttnGAN: Fine-Grained Text to Image Generation with Attentional Generative Adversarial
              Networks, CVPR 2018, Eq. 7-11. https://arxiv.org/abs/1711.10485
            - Cui, Zheng, Wang. MACD, EMNLP 2020 (the local loss of its released code).

        Inputs:
            +------------------------------+-------------------------------------+
            | Texts                        | Labels                              |
            +==============================+=====================================+
            | (caption, ...)               | region features (R, d) of its image |
            +------------------------------+-------------------------------------+

            Region grids are precomputed on the data side (``sbert-nonling features --regions``: 7 x 7 ResNet-50).
            :class:`~sbert_nonling.losses.MultimodalAlignLoss` builds one for its ``local_weight`` term (MACD).

        Example:
            ::

                import torch
                from sbert_nonling.losses.damsm import DAMSMLoss
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # an offline stand-in for e.g. "bert-base-uncased": a tiny random BERT
                sentences = ["A man is playing a guitar.", "A woman slices an onion."]
                encoder = build_tiny_encoder("tiny-bert", sentences, hidden_size=32)
                model = build_sentence_model(str(encoder), pooling="cls")
                loss = DAMSMLoss(model, image_dimension=16, projection_dimension=8)
                loss([model.preprocess(sentences)], torch.randn(2, 49, 16)).backward()  # 7 x 7 region grids
        """
        super().__init__()
        gamma1, gamma2, gamma3 = gammas  # a list from a saved config is accepted too
        if image_dimension <= 0 or projection_dimension <= 0 or min(gammas) <= 0:
            raise ValueError(
                f"image_dimension={image_dimension!r}, projection_dimension={projection_dimension!r} and "
                f"gammas={gammas!r} must be positive (MACD: 2048, 768, (1, 5, 10))."
            )
        self.model = model
        self.image_dimension = image_dimension
        self.projection_dimension = projection_dimension
        self.gammas = (gamma1, gamma2, gamma3)
        self.word_head = nn.Linear(embedding_dimension(model), projection_dimension)
        self.region_head = nn.Linear(image_dimension, projection_dimension)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None) -> Tensor:
        return self.compute_loss_from_outputs([self.model(next(iter(sentence_features)))], labels)

    def compute_loss_from_outputs(self, outputs: list[dict[str, Tensor]], labels: Tensor | None) -> Tensor:
        """The loss from the model output of the caption column and the region features (B, R, d), for wrappers.

        Args:
            outputs: the model's output of the caption column (one dict).
            labels: the region features (B, R, d).
        """
        output = outputs[0]
        regions = check_image_features(
            type(self).__name__, labels, output["token_embeddings"].shape[0], self.image_dimension, regions=True
        )
        words = self.word_head(output["token_embeddings"][:, 1:])  # (B, T - 1, p): [CLS] dropped
        scores = damsm_scores(
            words, output["attention_mask"][:, 1:], self.region_head(regions), self.gammas
        )  # (B_t, B_i)
        targets = torch.arange(scores.shape[0], device=scores.device)
        return (F.cross_entropy(scores, targets) + F.cross_entropy(scores.T, targets)) / 2

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "gammas": list(self.gammas)}
