"""MCSE's data mixing: text-only batches with a caption batch every len(text batches) // len(caption batches) steps."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate

import torch
from sentence_transformers.base.sampler import MultiDatasetDefaultBatchSampler
from torch.utils.data import BatchSampler, ConcatDataset


class InterleavedBatchSampler(MultiDatasetDefaultBatchSampler):
    """Yields the batches of the first dataset (text) in order and, after every ``len(text) // len(captions)`` of
    them, one batch of the second dataset (captions), as MCSE mixes wiki and caption batches.

    Pass the class as ``multi_dataset_batch_sampler`` with ``train_dataset={"text": ..., "captions": ...}`` (text
    first). Every caption batch is used once per epoch; nothing is cycled.
    """

    def __init__(
        self, dataset: ConcatDataset, batch_samplers: list[BatchSampler], generator: torch.Generator | None = None, seed: int = 0
    ) -> None:
        if len(batch_samplers) != 2:
            raise ValueError(f"InterleavedBatchSampler mixes exactly two datasets (text, captions), got {len(batch_samplers)}.")
        super().__init__(dataset, batch_samplers, generator=generator, seed=seed)

    @property
    def every(self) -> int:
        """A caption batch after this many text batches."""
        return max(1, len(self.batch_samplers[0]) // max(1, len(self.batch_samplers[1])))

    def __iter__(self) -> Iterator[list[int]]:
        offsets = [0, *accumulate(len(part) for part in self.dataset.datasets)]
        captions = iter(self.batch_samplers[1])
        for count, text_batch in enumerate(self.batch_samplers[0], start=1):
            yield [offsets[0] + index for index in text_batch]
            if count % self.every == 0:
                caption_batch = next(captions, None)
                if caption_batch is not None:
                    yield [offsets[1] + index for index in caption_batch]

    def __len__(self) -> int:
        text, captions = len(self.batch_samplers[0]), len(self.batch_samplers[1])
        return text + min(captions, text // self.every)
