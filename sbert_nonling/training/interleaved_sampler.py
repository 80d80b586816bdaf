"""MCSE's data mixing: text-only batches with a caption batch every len(text batches) // len(caption batches) steps."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import torch
from sentence_transformers.base.sampler import MultiDatasetDefaultBatchSampler
from sentence_transformers.util import get_world_size
from torch.utils.data import BatchSampler, ConcatDataset


class InterleavedBatchSampler(MultiDatasetDefaultBatchSampler):
    """Yields the batches of the first dataset (text) in order and, after every ``len(text) // len(captions)`` of
    them, one batch of the second (captions), as MCSE mixes them: pass the class as ``multi_dataset_batch_sampler``
    with ``train_dataset={"text": ..., "captions": ...}``. Under DDP every step is ``num_replicas`` (default: the world
    size) consecutive batches of one dataset, one per process; incomplete trailing groups are dropped.

    Args:
        dataset: the trainer's concatenation of the two datasets, text first.
        batch_samplers: the per-dataset batch samplers the trainer built, text first.
        generator: passed to sentence-transformers' base sampler (unused for the order, which is fixed).
        seed: passed to sentence-transformers' base sampler.
        num_replicas: the number of processes under DDP; None reads the world size.
    """

    def __init__(
        self,
        dataset: ConcatDataset,
        batch_samplers: list[BatchSampler],
        generator: torch.Generator | None = None,
        seed: int = 0,
        num_replicas: int | None = None,
    ) -> None:
        if len(batch_samplers) != 2:
            raise ValueError(
                f"InterleavedBatchSampler mixes exactly two datasets (text, captions), got {len(batch_samplers)}."
            )
        super().__init__(dataset, batch_samplers, generator=generator, seed=seed)
        self.num_replicas = get_world_size() if num_replicas is None else num_replicas

    @property
    def every(self) -> int:
        """A caption step after this many text steps."""
        text_steps = len(self.batch_samplers[0]) // self.num_replicas
        return max(1, text_steps // max(1, len(self.batch_samplers[1]) // self.num_replicas))

    def __iter__(self) -> Iterator[list[int]]:
        offsets = [0, *self.dataset.cumulative_sizes]  # where each dataset starts in the concatenation
        texts, captions = iter(self.batch_samplers[0]), iter(self.batch_samplers[1])
        count = 0
        while True:
            text_group = list(islice(texts, self.num_replicas))
            if len(text_group) < self.num_replicas:
                return
            count += 1
            yield from ([offsets[0] + index for index in batch] for batch in text_group)
            if count % self.every == 0:
                caption_group = list(islice(captions, self.num_replicas))
                if len(caption_group) == self.num_replicas:
                    yield from ([offsets[1] + index for index in batch] for batch in caption_group)

    def __len__(self) -> int:
        text_steps = len(self.batch_samplers[0]) // self.num_replicas
        caption_steps = len(self.batch_samplers[1]) // self.num_replicas
        return self.num_replicas * (text_steps + min(caption_steps, text_steps // self.every))
