"""Under DDP every process must take the same kind of step on different data (the package's batch samplers)."""

from __future__ import annotations

from torch.utils.data import BatchSampler, ConcatDataset, SequentialSampler

from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler
from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler


def _concat(*sizes: int) -> ConcatDataset:
    return ConcatDataset([list(range(size)) for size in sizes])


def _sequential(size: int, batch_size: int) -> BatchSampler:
    return BatchSampler(SequentialSampler(range(size)), batch_size, drop_last=True)


def test_unpaired_steps_are_grouped_per_process_and_union_to_the_doubled_batch():
    dataset = _concat(40, 32)  # images (index 0), text (index 1)
    grouped = list(UnpairedBatchSampler(dataset, [_sequential(40, 4), _sequential(32, 4)], 1, {0: 4}, seed=7, num_replicas=2))
    doubled = list(UnpairedBatchSampler(dataset, [_sequential(40, 8), _sequential(32, 8)], 1, {0: 8}, seed=7, num_replicas=1))
    assert len(grouped) == 2 * len(doubled) == 16
    for step, batch in enumerate(doubled):
        first, second = grouped[2 * step], grouped[2 * step + 1]  # process 0 and process 1 take these
        assert (first[0] < 40) == (second[0] < 40) == (batch[0] < 40)  # same kind of step (image or text)
        assert first + second == batch and not set(first) & set(second)


def test_interleaved_caption_steps_are_taken_by_every_process_together():
    dataset = _concat(64, 16)  # text (index 0), captions (index 1)
    sampler = InterleavedBatchSampler(dataset, [_sequential(64, 4), _sequential(16, 4)], num_replicas=2)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 2 * (8 + 2)
    kinds = ["caption" if batch[0] >= 64 else "text" for batch in batches]
    assert all(kinds[index] == kinds[index + 1] for index in range(0, len(kinds), 2))
    assert kinds.count("caption") == 4 and kinds[8:10] == ["caption", "caption"]  # every 4 text steps
