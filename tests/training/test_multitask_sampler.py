from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from sentence_transformers.base.sampler import (
    DefaultBatchSampler,
    MultiDatasetBatchSamplers,
)
from torch.utils.data import ConcatDataset, SubsetRandomSampler

from sbert_nonling.training.multitask_sampler import (
    MultiTaskAverageBatchSampler,
    multitask_sampler_arguments,
)


def _sampler(sizes, batch_size=2, num_replicas=1, seed=7):
    generator = torch.Generator()
    datasets = [Dataset.from_dict({"x": list(range(size))}) for size in sizes]
    samplers = [
        DefaultBatchSampler(
            SubsetRandomSampler(range(size), generator=generator), batch_size=batch_size, drop_last=True
        )
        for size in sizes
    ]
    return MultiTaskAverageBatchSampler(
        ConcatDataset(datasets), samplers, generator=generator, seed=seed, num_replicas=num_replicas
    )


def _dataset_of(row, sizes):
    for index, size in enumerate(sizes):
        if row < size:
            return index
        row -= size


def test_every_group_holds_one_batch_per_task_and_the_largest_sets_the_epoch():
    sizes = [10, 4, 6]  # 5, 2 and 3 batches of 2
    sampler = _sampler(sizes)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 5 * 3
    tasks = [{_dataset_of(row, sizes) for row in batch} for batch in batches]
    assert tasks == [{0}, {1}, {2}] * 5
    largest = sorted(row for batch in batches[0::3] for row in batch)
    assert largest == list(range(10))  # the largest task is seen exactly once
    small = [sorted(row for batch in batches[1::3][start : start + 2] for row in batch) for start in (0, 2)]
    assert small == [list(range(10, 14))] * 2  # the 4-row task is cycled: every pass covers it once
    assert list(_sampler(sizes)) == batches  # seeded
    sampler.set_epoch(1)
    assert list(sampler) != batches


def test_replicas_get_the_same_task_in_step():
    sizes = [8, 4]
    sampler = _sampler(sizes, num_replicas=2)
    batches = list(sampler)
    assert len(batches) == len(sampler) == (4 // 2) * 2 * 2
    tasks = [_dataset_of(batch[0], sizes) for batch in batches]
    assert tasks == [0, 0, 1, 1, 0, 0, 1, 1]


def test_errors_and_scheme_arguments():
    with pytest.raises(ValueError, match=r"Dataset\(s\) \[1\] yield no batch"):
        _sampler([10, 1], batch_size=2)
    assert multitask_sampler_arguments("average", 3) == {
        "multi_dataset_batch_sampler": MultiTaskAverageBatchSampler,
        "gradient_accumulation_steps": 3,
    }
    assert (
        multitask_sampler_arguments("round_robin", 3)["multi_dataset_batch_sampler"]
        == MultiDatasetBatchSamplers.ROUND_ROBIN
    )
    assert multitask_sampler_arguments("proportional", 3) == {
        "multi_dataset_batch_sampler": MultiDatasetBatchSamplers.PROPORTIONAL,
        "gradient_accumulation_steps": 1,
    }
    with pytest.raises(ValueError, match="scheme='gradient_surgery' must be one of"):
        multitask_sampler_arguments("gradient_surgery", 3)
