"""UnpairedBatchSampler: modality batch(es) then a text batch; the text sets the epoch; under DDP, per-process
groups."""

from __future__ import annotations

import pytest
from datasets import Dataset
from torch.utils.data import BatchSampler, ConcatDataset, SequentialSampler

from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler


def test_sampler_cycles_the_modality_and_follows_the_text_epoch():
    text, images = Dataset.from_dict({"x": list(range(10))}), Dataset.from_dict({"x": list(range(3))})
    concat = ConcatDataset([images, text])
    text_sampler = BatchSampler(SequentialSampler(text), batch_size=4, drop_last=False)
    image_sampler = BatchSampler(SequentialSampler(images), 2, False)
    sampler = UnpairedBatchSampler(concat, [image_sampler, text_sampler], text_index=1, batch_sizes={0: 2})
    batches = list(sampler)
    assert len(batches) == len(sampler) == 6
    assert [all(i < 3 for i in batch) for batch in batches] == [True, False] * 3  # image batch first, then text
    assert sorted(i - 3 for batch in batches[1::2] for i in batch) == list(range(10))  # every text row once
    assert all(len(batch) == 2 for batch in batches[0::2])  # own batch size, cycled past the 3 images
    assert (
        list(UnpairedBatchSampler(concat, [image_sampler, text_sampler], text_index=1, batch_sizes={0: 2})) == batches
    )  # seeded
    with pytest.raises(ValueError, match="Batch size 5 for dataset 0 must be between 1 and its size"):
        UnpairedBatchSampler(concat, [image_sampler, text_sampler], text_index=1, batch_sizes={0: 5})


def test_unpaired_steps_are_grouped_per_process_and_union_to_the_doubled_batch(concat, sequential):
    dataset = concat(40, 32)  # images (index 0), text (index 1)
    grouped = list(
        UnpairedBatchSampler(dataset, [sequential(40, 4), sequential(32, 4)], 1, {0: 4}, seed=7, num_replicas=2)
    )
    doubled = list(
        UnpairedBatchSampler(dataset, [sequential(40, 8), sequential(32, 8)], 1, {0: 8}, seed=7, num_replicas=1)
    )
    assert len(grouped) == 2 * len(doubled) == 16
    for step, batch in enumerate(doubled):
        first, second = grouped[2 * step], grouped[2 * step + 1]  # process 0 and process 1 take these
        assert (first[0] < 40) == (second[0] < 40) == (batch[0] < 40)  # same kind of step (image or text)
        assert first + second == batch and not set(first) & set(second)
