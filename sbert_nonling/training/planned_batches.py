"""Which dataset each training step of a trainer will read, known before the first step: what a step cap leaves out."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset, DatasetDict
from sentence_transformers.base.sampler import MultiDatasetDefaultBatchSampler
from sentence_transformers.base.trainer import BaseTrainer
from torch.utils.data import BatchSampler, ConcatDataset


@dataclass(frozen=True)
class BatchPlan:
    """The training batches of a trainer's run, per training dataset.

    Args:
        batches: batches per dataset name over the whole run, in the datasets' order.
        first_step: per dataset name, the optimizer step that reads its first batch, or None if the batch order never
            reaches it (one epoch of the sampler holds no batch of it).
        optimizer_steps: the run's optimizer steps (``max_steps``, or its epochs' batches).
        sampler: the class name of the multi-dataset batch sampler that orders the datasets ("" for one dataset).
    """

    batches: dict[str, int]
    first_step: dict[str, int | None]
    optimizer_steps: int
    sampler: str

    @property
    def unused(self) -> list[str]:
        """The datasets the run reads no batch of."""
        return [name for name, count in self.batches.items() if count == 0]


def planned_batches(trainer: BaseTrainer) -> BatchPlan:
    """The batches per training dataset that ``trainer.train()`` will read, from the trainer's own batch samplers
    (:meth:`get_batch_sampler`, :meth:`get_multi_dataset_batch_sampler`, built as its DataLoader builds them, with
    their own generator: the global random state is not touched; later epochs are counted in the first one's order)
    and its ``max_steps``, epochs and gradient accumulation. Batches are index lists: no row is collated, decoded or
    augmented.

    sentence-transformers builds the batch order only inside ``train()``; this reads it ahead, so that a run can refuse
    a step cap that would leave a dataset out before its first step (``InterleavedBatchSampler`` puts one caption batch
    after every ``len(text) // len(captions)`` text batches).

    Args:
        trainer: a sentence-transformers trainer with its training dataset (a Dataset, or a DatasetDict of several).

    Example::

        from datasets import Dataset, DatasetDict
        from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
        from sbert_nonling.losses import SimCSELoss
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder
        from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler
        from sbert_nonling.training.planned_batches import planned_batches

        sentences = [f"Sentence number {number}." for number in range(40)]
        model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))  # offline
        data = DatasetDict({"text": Dataset.from_dict({"anchor": sentences, "positive": sentences}),
                            "captions": Dataset.from_dict({"anchor": sentences[:8], "positive": sentences[:8]})})
        args = SentenceTransformerTrainingArguments("checkpoints", max_steps=3, per_device_train_batch_size=4,
                                                    multi_dataset_batch_sampler=InterleavedBatchSampler)
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=SimCSELoss(model))
        print(planned_batches(trainer).batches)  # {'text': 3, 'captions': 0}: the first caption batch is step 6
    """
    args = trainer.args
    accumulation = args.gradient_accumulation_steps * args.world_size  # batches per optimizer step, all processes
    dataset = trainer.train_dataset
    if isinstance(dataset, Dataset):
        batches_per_epoch = (
            len(dataset) // args.train_batch_size
            if args.dataloader_drop_last
            else math.ceil(len(dataset) / args.train_batch_size)
        )
        steps = (
            args.max_steps
            if args.max_steps > 0
            else math.ceil(args.num_train_epochs * batches_per_epoch / accumulation)
        )
        return BatchPlan({"train": steps * accumulation}, {"train": 1}, steps, "")
    if not isinstance(dataset, DatasetDict):
        raise ValueError(
            f"planned_batches needs a Dataset or a DatasetDict as the training dataset, got {type(dataset).__name__}."
        )
    generator = torch.Generator().manual_seed(args.seed)
    batch_samplers: list[BatchSampler] = []
    for part in dataset.values():
        batch_sampler = trainer.get_batch_sampler(
            part,
            batch_size=args.train_batch_size,
            drop_last=args.dataloader_drop_last,
            valid_label_columns=trainer.data_collator.valid_label_columns,
            generator=generator,
            seed=args.seed,
        )
        assert batch_sampler is not None  # None only for an IterableDataset, which a DatasetDict does not hold
        batch_samplers.append(batch_sampler)
    concatenated: ConcatDataset[Any] = ConcatDataset(list(dataset.values()))
    sampler = trainer.get_multi_dataset_batch_sampler(
        dataset=concatenated, batch_samplers=batch_samplers, generator=generator, seed=args.seed
    )
    epoch_length = len(sampler)
    total = args.max_steps * accumulation if args.max_steps > 0 else math.ceil(args.num_train_epochs) * epoch_length
    names = list(dataset)
    # the dataset of each batch of the first epoch, as far as the run reads it or until every dataset has appeared
    sequence: list[int] = []
    if isinstance(sampler, MultiDatasetDefaultBatchSampler):
        sampler.set_epoch(0)
    for batch in sampler:
        if len(sequence) >= min(total, epoch_length) and len(set(sequence)) == len(names):
            break
        sequence.append(bisect.bisect_right(concatenated.cumulative_sizes, int(batch[0])))
    full_epochs, rest = divmod(total, epoch_length) if epoch_length else (0, 0)  # later epochs: the first one's order
    counted = sequence * full_epochs + sequence[:rest] if full_epochs else sequence[:total]
    batches = {name: counted.count(index) for index, name in enumerate(names)}
    first_step = {
        name: sequence.index(index) // accumulation + 1 if index in sequence else None
        for index, name in enumerate(names)
    }
    return BatchPlan(batches, first_step, math.ceil(total / accumulation), type(sampler).__name__)
