"""Batch order for unpaired modalities: one batch of every modality source, then one text batch, repeatedly."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count, islice

import torch
from sentence_transformers.base.sampler import MultiDatasetDefaultBatchSampler
from sentence_transformers.util import get_world_size
from torch.utils.data import BatchSampler, ConcatDataset

from sbert_nonling.data.images import SeededRow


class UnpairedBatchSampler(MultiDatasetDefaultBatchSampler):
    """Yields, for every text batch, first one batch of each modality dataset, then the text batch (VisualCSE's order).

    The text dataset alone sets the epoch length (its batches come from the trainer's batch sampler, e.g.
    ``NO_DUPLICATES``); modality datasets of any size are reshuffled (seeded by ``seed + epoch``) and cycled with their
    own batch size. Under DDP every step is ``num_replicas`` consecutive batches of the *same* dataset, one per
    process, so every process takes the same kind of step with the same loss. Further reading: docs/reliability.md,
    "Distributed training".

    Args:
        dataset, batch_samplers: the trainer's ConcatDataset and per-dataset batch samplers (only the text one is
            used).
        text_index: position of the text dataset among the datasets.
        batch_sizes: batch size per dataset position for the modality datasets.
        generator, seed: as for the built-in samplers.
        num_replicas: processes sharing the batches; default: the torch.distributed world size (1 if not distributed).
    """

    def __init__(
        self,
        dataset: ConcatDataset,
        batch_samplers: list[BatchSampler],
        text_index: int,
        batch_sizes: dict[int, int],
        generator: torch.Generator | None = None,
        seed: int = 0,
        num_replicas: int | None = None,
    ) -> None:
        super().__init__(dataset, batch_samplers, generator=generator, seed=seed)
        self.num_replicas = get_world_size() if num_replicas is None else num_replicas
        sizes = [end - start for start, end in zip([0, *dataset.cumulative_sizes], dataset.cumulative_sizes)]
        for index, batch_size in batch_sizes.items():
            if index != text_index and not 0 < batch_size <= sizes[index]:
                raise ValueError(
                    f"Batch size {batch_size} for dataset {index} must be between 1 and its size ({sizes[index]})."
                )
        self.text_index = text_index
        self.batch_sizes = batch_sizes
        self.modality_indices = [index for index in range(len(sizes)) if index != text_index]

    def _cycle(self, index: int, generator: torch.Generator, offset: int) -> Iterator[list[int]]:
        """Reshuffled passes over dataset ``index`` (rows from ``offset``), each index a :class:`SeededRow` of its
        pass."""
        size, batch_size = self.dataset.cumulative_sizes[index] - offset, self.batch_sizes[index]
        for passes in count():
            order = torch.randperm(size, generator=generator).tolist()
            draw = self.epoch * 1_000_000 + passes
            for start in range(0, size - batch_size + 1, batch_size):
                yield [SeededRow(offset + row, draw) for row in order[start : start + batch_size]]

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        offsets = [0, *self.dataset.cumulative_sizes]  # where each dataset starts in the concatenation
        cycles = {index: self._cycle(index, generator, offsets[index]) for index in self.modality_indices}
        text_batches = iter(self.batch_samplers[self.text_index])
        while True:
            group = list(islice(text_batches, self.num_replicas))
            if len(group) < self.num_replicas:
                return
            for index in self.modality_indices:
                for _ in range(self.num_replicas):
                    yield next(cycles[index])
            for text_batch in group:
                yield [offsets[self.text_index] + position for position in text_batch]

    def __len__(self) -> int:
        steps = len(self.batch_samplers[self.text_index]) // self.num_replicas
        return steps * self.num_replicas * (1 + len(self.modality_indices))
