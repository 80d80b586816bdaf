"""Caption <-> image retrieval through a grounding loss's shared space (MCSE's Recall@K by-product)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer


@runtime_checkable
class SharedSpace(Protocol):
    """What a caption <-> image retrieval needs from a trained grounding loss: its projections of sentence embeddings
    and of image features into one space (:class:`~sbert_nonling.losses.MultimodalAlignLoss`, KDMCSE's
    :class:`~sbert_nonling.losses.TeacherGuidedAlignLoss`), and a training mode to switch off while they run (a
    module's). ``isinstance(loss, SharedSpace)`` tells whether a loss has such a space."""

    training: bool

    def train(self, mode: bool = True) -> object:
        """Training (``True``) or eval mode, as ``nn.Module.train``.

        Args:
            mode: training or not.
        """

    def project_text(self, sentence_embeddings: torch.Tensor) -> torch.Tensor:
        """Sentence embeddings (B, hidden) in the shared space (B, p).

        Args:
            sentence_embeddings: the pooled sentence embeddings (B, hidden).
        """

    def project_images(self, image_features: torch.Tensor) -> torch.Tensor:
        """Image features (B, d), as the loss was trained on, in the shared space (B, p).

        Args:
            image_features: the frozen image features (B, d).
        """


def retrieval_recalls(
    text_vectors: torch.Tensor,
    image_vectors: torch.Tensor,
    caption_to_image: Sequence[int],
    ks: Sequence[int] = (1, 5),
) -> dict[str, float]:
    """Recall@K x100 both ways, cosine, from caption (C, p) and image (I, p) vectors (an image hits with any
    caption).

    Args:
        text_vectors: caption vectors (C, p).
        image_vectors: image vectors (I, p), in the same space.
        caption_to_image: the index of each caption's image, length C.
        ks: the K values of Recall@K.
    """
    targets = torch.as_tensor(list(caption_to_image))
    if targets.shape[0] != text_vectors.shape[0]:
        raise ValueError(f"{text_vectors.shape[0]} captions but {targets.shape[0]} caption -> image indices.")
    if targets.numel() and (targets.min() < 0 or targets.max() >= image_vectors.shape[0]):
        raise ValueError(f"caption -> image indices must lie in [0, {image_vectors.shape[0]}).")
    similarity = F.normalize(text_vectors.float(), dim=-1) @ F.normalize(image_vectors.float(), dim=-1).T  # (C, I)
    scores = {}
    for k in ks:
        top_images = similarity.topk(min(k, similarity.shape[1]), dim=1).indices  # (C, k)
        scores[f"text_to_image_R@{k}"] = 100.0 * (top_images == targets[:, None]).any(1).float().mean().item()
        top_captions = similarity.T.topk(min(k, similarity.shape[0]), dim=1).indices  # (I, k)
        hits = (targets[top_captions] == torch.arange(similarity.shape[1])[:, None]).any(1)
        scores[f"image_to_text_R@{k}"] = 100.0 * hits.float().mean().item()
    return scores


@torch.no_grad()
def evaluate_retrieval(
    model: SentenceTransformer,
    loss: SharedSpace,
    captions: Sequence[str],
    caption_to_image: Sequence[int],
    image_features: torch.Tensor,
    ks: Sequence[int] = (1, 5),
    batch_size: int = 64,
) -> dict[str, float]:
    """Recall@K of held-out caption-image pairs (frozen ``image_features``) in ``loss``'s shared space, as MCSE reports
    (an evaluation inside a run: no progress bar, as sentence-transformers' evaluators).

    Args:
        model: the sentence encoder; captions are encoded with ``model.encode``.
        loss: the trained loss with a :class:`SharedSpace` (MCSE's, KDMCSE's); its projection heads map the caption
            embeddings and the image features into the shared space (run in eval mode, then restored).
        captions: the held-out captions.
        caption_to_image: the row of ``image_features`` each caption describes.
        image_features: frozen global image features (I, d), as the loss was trained on.
        ks: the K values of Recall@K.
        batch_size: captions per ``encode`` batch.
    """
    texts = model.encode(list(captions), batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False)
    was_training = loss.training
    loss.train(False)
    try:
        text_vectors = loss.project_text(texts)
        image_vectors = loss.project_images(image_features.float().to(texts.device))
    finally:
        loss.train(was_training)
    return retrieval_recalls(text_vectors.cpu(), image_vectors.cpu(), caption_to_image, ks)
