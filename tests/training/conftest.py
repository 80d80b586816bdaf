"""Helpers of the training tests: the arguments of a small checkpointed run, concatenated toy datasets and sequential
per-dataset batch samplers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sentence_transformers import SentenceTransformerTrainingArguments
from torch.utils.data import BatchSampler, ConcatDataset, SequentialSampler


def small_run_arguments(output_dir: Path, max_steps: int, **extra: Any) -> SentenceTransformerTrainingArguments:
    """A small run checkpointed every 2 steps: batch 8, constant learning rate 1e-3, seed 3; ``extra`` on top."""
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        save_strategy="steps",
        save_steps=2,
        report_to="none",
        seed=3,
        lr_scheduler_type="constant",
        **extra,
    )


@pytest.fixture
def concat():
    """``concat(*sizes)``: a ConcatDataset of ``range(size)`` lists, indices running on across them."""

    def build(*sizes: int) -> ConcatDataset:
        return ConcatDataset([list(range(size)) for size in sizes])

    return build


@pytest.fixture
def sequential():
    """``sequential(size, batch_size)``: in-order batches of ``range(size)``, the last incomplete one dropped."""

    def build(size: int, batch_size: int) -> BatchSampler:
        return BatchSampler(SequentialSampler(range(size)), batch_size, drop_last=True)

    return build
