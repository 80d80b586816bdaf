"""Multi-task batch order: one batch of every task per optimizer step (the "average loss" scheme), or ST's samplers."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from itertools import count
from typing import Any

from sentence_transformers.base.sampler import MultiDatasetBatchSamplers, RoundRobinBatchSampler
from sentence_transformers.util import get_world_size
from torch.utils.data import BatchSampler

from sbert_nonling.configs.multitask import MultiTaskScheme

#: The scheme names (:data:`~sbert_nonling.configs.multitask.MultiTaskScheme`).
MULTITASK_SCHEMES: tuple[str, ...] = typing.get_args(MultiTaskScheme)

#: Added to a task's epoch for every extra pass the average sampler makes over it (new shuffle per pass).
_PASS_EPOCH_STRIDE = 1_000_003


class MultiTaskAverageBatchSampler(RoundRobinBatchSampler):
    """Yields one batch of every dataset in turn, ``(task 1, ..., task K), (task 1, ...)``, so that with
    ``gradient_accumulation_steps = K`` each optimizer step's gradient is that of the paper's *average* of the K task
    losses. Unlike :class:`~sentence_transformers.base.sampler.RoundRobinBatchSampler`, the *largest* dataset sets the
    epoch (smaller ones are cycled, reshuffled by a fresh epoch number) and the number of batches is a multiple of K.
    Under DDP each task contributes ``num_replicas`` consecutive batches per group (one per process).

    Args:
        dataset, batch_samplers, generator, seed: as for the built-in samplers.
        num_replicas: processes sharing the batches; default: the torch.distributed world size (1 if not distributed).
    """

    def __init__(
        self,
        dataset,
        batch_samplers: list[BatchSampler],
        generator=None,
        seed: int = 0,
        num_replicas: int | None = None,
    ) -> None:
        super().__init__(dataset, batch_samplers, generator=generator, seed=seed)
        self.num_replicas = get_world_size() if num_replicas is None else num_replicas
        if self.num_replicas < 1:
            raise ValueError(f"num_replicas={self.num_replicas!r} must be at least 1.")
        empty = [index for index, sampler in enumerate(batch_samplers) if len(sampler) == 0]
        if empty:
            raise ValueError(
                f"Dataset(s) {empty} yield no batch (fewer rows than the batch size with drop_last); use a smaller "
                "batch size or more data."
            )

    def _cycle(self, index: int) -> Iterator[list[int]]:
        """Batches of dataset ``index``: its first pass with the current epoch, later passes reshuffled."""
        sampler = self.batch_samplers[index]
        for passes in count(1):
            batch = None
            for batch in sampler:
                yield batch
            if batch is None:
                raise ValueError(f"Dataset {index}'s batch sampler yielded no batch in a pass; it cannot be cycled.")
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(self.epoch + passes * _PASS_EPOCH_STRIDE)

    def _groups(self) -> int:
        return max(len(sampler) for sampler in self.batch_samplers) // self.num_replicas

    def __iter__(self) -> Iterator[list[int]]:
        if self.generator is not None and self.seed is not None:
            self.generator.manual_seed(self.seed + self.epoch)
        for sampler in self.batch_samplers:  # every pass of this epoch starts from the epoch's own order
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(self.epoch)
        offsets = [0, *self.dataset.cumulative_sizes]  # where each dataset starts in the concatenation
        cycles = [self._cycle(index) for index in range(len(self.batch_samplers))]
        for _ in range(self._groups()):
            for index, cycle in enumerate(cycles):
                for _ in range(self.num_replicas):
                    yield [row + offsets[index] for row in next(cycle)]

    def __len__(self) -> int:
        return self._groups() * len(self.batch_samplers) * self.num_replicas


def multitask_sampler_arguments(scheme: MultiTaskScheme, num_tasks: int) -> dict[str, Any]:
    """The trainer arguments a scheme needs: ``multi_dataset_batch_sampler`` and ``gradient_accumulation_steps``.

    ``average``: :class:`MultiTaskAverageBatchSampler`, one accumulation step per task; else ST's sampler of that name.

    Args:
        scheme: ``"average"``, ``"round_robin"`` or ``"proportional"``.
        num_tasks: the number of task datasets.
    """
    if scheme not in MULTITASK_SCHEMES:
        raise ValueError(f"scheme={scheme!r} must be one of {list(MULTITASK_SCHEMES)}.")
    if num_tasks < 1:
        raise ValueError(f"num_tasks={num_tasks!r} must be at least 1.")
    if scheme == "average":
        return {"multi_dataset_batch_sampler": MultiTaskAverageBatchSampler, "gradient_accumulation_steps": num_tasks}
    sampler = (
        MultiDatasetBatchSamplers.ROUND_ROBIN if scheme == "round_robin" else MultiDatasetBatchSamplers.PROPORTIONAL
    )
    return {"multi_dataset_batch_sampler": sampler, "gradient_accumulation_steps": 1}
