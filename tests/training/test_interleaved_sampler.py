"""InterleavedBatchSampler: MCSE's caption batch every k text batches; under DDP every process takes it together."""

from __future__ import annotations

import pytest
from datasets import Dataset
from torch.utils.data import BatchSampler, ConcatDataset, SequentialSampler

from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler


def test_interleaved_sampler_puts_a_caption_batch_every_k_text_batches():
    text, captions = Dataset.from_dict({"x": list(range(20))}), Dataset.from_dict({"x": list(range(6))})
    samplers = [BatchSampler(SequentialSampler(text), 2, False), BatchSampler(SequentialSampler(captions), 2, False)]
    sampler = InterleavedBatchSampler(ConcatDataset([text, captions]), samplers)
    batches = list(sampler)
    kinds = ["c" if batch[0] >= 20 else "t" for batch in batches]
    assert sampler.every == 3 and len(batches) == len(sampler) == 13
    assert "".join(kinds) == "tttctttctttct"
    with pytest.raises(ValueError, match="exactly two datasets"):
        InterleavedBatchSampler(ConcatDataset([text]), samplers[:1])


def test_interleaved_caption_steps_are_taken_by_every_process_together(concat, sequential):
    dataset = concat(64, 16)  # text (index 0), captions (index 1)
    sampler = InterleavedBatchSampler(dataset, [sequential(64, 4), sequential(16, 4)], num_replicas=2)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 2 * (8 + 2)
    kinds = ["caption" if batch[0] >= 64 else "text" for batch in batches]
    assert all(kinds[index] == kinds[index + 1] for index in range(0, len(kinds), 2))
    assert kinds.count("caption") == 4 and kinds[8:10] == ["caption", "caption"]  # every 4 text steps
