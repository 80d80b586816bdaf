"""GradCache variant of the unpaired image / audio contrastive loss: the memory of a mini-batch, any batch size."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.gradcache import CachedLossMixin
from torch import Tensor

from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss


class CachedUnpairedModalityContrastiveLoss(CachedLossMixin, UnpairedModalityContrastiveLoss):
    config_keys = (*UnpairedModalityContrastiveLoss.config_keys, "mini_batch_size")
    bibtex_keys = (*UnpairedModalityContrastiveLoss.bibtex_keys, "gao2021scaling")

    def __init__(
        self,
        model: SentenceTransformer,
        *args: Any,
        mini_batch_size: int = 8,
        show_progress_bar: bool = False,
        **kwargs: Any,
    ) -> None:
        r""":class:`UnpairedModalityContrastiveLoss` computed with GradCache (Gao et al., 2021): the same loss and,
        up to floating-point order, the same gradients, with the encoder's activations alive for only
        ``mini_batch_size`` views at a time, for a second forward pass of every view (see docs/visualcse.md).

        sentence-transformers' ``CachedLossMixin`` runs the GradCache steps; the loss-owned head's gradients are cached
        with the embeddings' and added in the outer backward pass, scaled by its gradient (fp16 loss scaling, gradient
        accumulation) as the encoder's are.

        Args:
            model, mode, temperature, training_head, gather_across_devices: as
                :class:`UnpairedModalityContrastiveLoss`.
            mini_batch_size: views embedded at a time (memory bound); the loss is independent of it.
            show_progress_bar: show a progress bar over the mini-batches.

        References:
            - Gao et al., 2021, Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup
              (https://arxiv.org/abs/2101.06983).

        Example:
            ::

                from sbert_nonling import AudioPatchEmbed, CachedUnpairedModalityContrastiveLoss, SharedEncoder
                from sbert_nonling.models import build_sentence_model, build_tiny_encoder

                # AudioCSE's audio route on an offline stand-in for e.g. "bert-base-uncased" (a tiny random BERT)
                path = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)
                model = build_sentence_model(SharedEncoder(str(path)), front_ends={"audio": AudioPatchEmbed()})
                # any batch (e.g. 64 clips x 2 views) keeps the encoder's activations of only 8 views at a time
                loss = CachedUnpairedModalityContrastiveLoss(model, mode="supcon", mini_batch_size=8)
        """
        super().__init__(model, *args, **kwargs)
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size={mini_batch_size!r} must be a positive number of views.")
        self.mini_batch_size = mini_batch_size
        self.show_progress_bar = show_progress_bar
        self._head_gradients: tuple[Tensor | None, ...] = ()

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        sentence_features = list(sentence_features)
        if len(sentence_features) != 2:
            raise ValueError(f"{type(self).__name__} expects two view columns, got {len(sentence_features)}.")
        loss = self.forward_cached(sentence_features, labels)
        if loss.requires_grad and self._head_gradients:
            parameters, gradients, self._head_gradients = self._head_parameters(), self._head_gradients, ()
            loss.register_hook(functools.partial(_accumulate, parameters, gradients))
        return loss

    def _head_parameters(self) -> list[Tensor]:
        return [parameter for parameter in self.head.parameters() if parameter.requires_grad]

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        embeddings = [self.head(torch.cat(column)) for column in reps]  # (N, d) per view
        loss = self.compute_loss_from_embeddings(embeddings, labels)
        if with_backward:
            views, parameters = [rep for column in reps for rep in column], self._head_parameters()
            gradients = torch.autograd.grad(
                loss, views + parameters, allow_unused=True
            )  # unused: the mixin says which
            for view, gradient in zip(views, gradients):
                view.grad = gradient  # the cache GradCache's step 3 reads
            self._head_gradients = gradients[len(views) :]
            loss = loss.detach()
        return loss


@torch.no_grad()
def _accumulate(parameters: list[Tensor], gradients: tuple[Tensor | None, ...], grad_output: Tensor) -> None:
    """Add ``grad_output`` times the cached ``gradients`` to the parameters' gradients (the outer backward's hook)."""
    for parameter, gradient in zip(parameters, gradients):
        if gradient is None:
            continue
        scaled = gradient * grad_output
        parameter.grad = scaled if parameter.grad is None else parameter.grad + scaled
