"""Helpers of the batch-sampler tests: concatenated toy datasets and sequential per-dataset batch samplers."""

from __future__ import annotations

import pytest
from torch.utils.data import BatchSampler, ConcatDataset, SequentialSampler


@pytest.fixture
def concat():
    """``concat(*sizes)``: a ConcatDataset of ``range(size)`` lists, indices running on across them."""
    return lambda *sizes: ConcatDataset([list(range(size)) for size in sizes])


@pytest.fixture
def sequential():
    """``sequential(size, batch_size)``: in-order batches of ``range(size)``, the last incomplete one dropped."""
    return lambda size, batch_size: BatchSampler(SequentialSampler(range(size)), batch_size, drop_last=True)
