"""A step-capped run's epochs as one DataLoader pass: the workers prepare the next epoch's first batches early."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from datasets import Dataset
from torch.utils.data import BatchSampler

from sbert_nonling.training.trainer import NonLinguisticTrainer


class ContinuousEpochsBatchSampler(BatchSampler):
    """Yields ``epochs`` epochs of ``epoch_sampler`` one after another, as one pass.

    Epoch ``e`` of the pass is the epoch sampler's epoch ``first + e`` (``set_epoch`` on it and on its index sampler,
    where ``first`` is the epoch the trainer sets), so the batches and their order are those of ``epochs`` separate
    passes. What changes is the
    DataLoader: its workers never run out of indices at an epoch's end, so the first batches of the next epoch are
    prepared while the last ones of the previous epoch train. With separate passes every epoch starts from idle
    workers, and the trainer waits until one worker has prepared a whole batch (Pixel Linguist's 768 rendered pairs:
    about 0.3 s on one CPU core, more than a GPU step).

    Args:
        epoch_sampler: The batch sampler of one epoch, with a ``set_epoch`` method (sentence-transformers' batch
            samplers have one).
        epochs: How many epochs the pass holds (at least 1).

    Example::

        import torch
        from datasets import Dataset
        from sentence_transformers.base.sampler import NoDuplicatesBatchSampler
        from sbert_nonling.training.continuous_epochs import ContinuousEpochsBatchSampler

        dataset = Dataset.from_dict({"anchor": [f"Sentence {number}." for number in range(10)]})
        epoch_sampler = NoDuplicatesBatchSampler(dataset, 4, drop_last=True, generator=torch.Generator(), seed=0)
        sampler = ContinuousEpochsBatchSampler(epoch_sampler, epochs=3)
        print(len(sampler), list(sampler)[:3])  # 6 batches: epoch 0's two, then epoch 1's, then epoch 2's
    """

    def __init__(self, epoch_sampler: Any, epochs: int) -> None:
        if epochs < 1:
            raise ValueError(f"epochs={epochs!r} must be at least 1.")
        if not hasattr(epoch_sampler, "set_epoch"):
            raise ValueError(
                f"The epoch sampler ({type(epoch_sampler).__name__}) has no set_epoch method: its epochs could not be "
                "told apart."
            )
        self.epoch_sampler = epoch_sampler
        self.epochs = epochs
        self.epoch = 0
        # what accelerate reads of a batch sampler (its batch size, for sharding across processes)
        self.batch_size = epoch_sampler.batch_size
        self.drop_last = epoch_sampler.drop_last

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch the pass starts with (the trainer sets it before iterating).

        Args:
            epoch: the first epoch of the pass.
        """
        self.epoch = epoch

    @property
    def sampler(self) -> Any:
        """The epoch sampler's index sampler: accelerate reads it and may replace it (a ``RandomSampler`` by its
        seedable sampler, which is reshuffled per epoch)."""
        return self.epoch_sampler.sampler

    @sampler.setter
    def sampler(self, sampler: Any) -> None:
        self.epoch_sampler.sampler = sampler

    def __iter__(self) -> Iterator[list[int]]:
        for offset in range(self.epochs):
            epoch = self.epoch + offset
            self.epoch_sampler.set_epoch(epoch)
            set_index_epoch = getattr(getattr(self.epoch_sampler, "sampler", None), "set_epoch", None)
            if set_index_epoch is not None:
                set_index_epoch(epoch)  # the index sampler's epoch, as the trainer sets it before each separate pass
            yield from self.epoch_sampler

    def __len__(self) -> int:
        return self.epochs * len(self.epoch_sampler)


class ContinuousEpochsTrainer(NonLinguisticTrainer):
    """:class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` whose run with a step cap (``max_steps``) that
    needs more than one epoch of its training dataset reads all those epochs in one DataLoader pass
    (:class:`ContinuousEpochsBatchSampler`): the same batches in the same order, without the stall at each epoch's
    start. A run that fits in one epoch, a run counted in epochs, a dict of training datasets and the evaluation
    DataLoaders are left as they are.

    The trainer then counts the run as one epoch: the logged ``epoch`` is the share of that pass, not of the
    dataset. Pixel Linguist's stages train with it (their renders are the costliest batches of the package).

    Args:
        args: As :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` takes them.
        kwargs: As :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` takes them.

    Example::

        from datasets import Dataset
        from sentence_transformers import SentenceTransformerTrainingArguments
        from sbert_nonling.losses import SimCSELoss
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder
        from sbert_nonling.training.continuous_epochs import ContinuousEpochsTrainer

        sentences = [f"Sentence number {number}." for number in range(8)]
        model = build_sentence_model(str(build_tiny_encoder("tiny-bert", sentences, hidden_size=32)))  # offline
        args = SentenceTransformerTrainingArguments("checkpoints", max_steps=3, per_device_train_batch_size=4,
                                                    report_to="none")
        dataset = Dataset.from_dict({"anchor": sentences, "positive": sentences})
        trainer = ContinuousEpochsTrainer(model=model, args=args, train_dataset=dataset, loss=SimCSELoss(model))
        print(len(trainer.get_train_dataloader()))  # 4: two epochs of 2 batches in one pass
        trainer.train()
    """

    def get_batch_sampler(self, dataset: Dataset, *args: Any, **kwargs: Any) -> BatchSampler | None:
        """The parent's batch sampler; for the training dataset of a step-capped run longer than one epoch, wrapped in
        :class:`ContinuousEpochsBatchSampler` with the epochs the run reads."""
        epoch_sampler = super().get_batch_sampler(dataset, *args, **kwargs)
        if epoch_sampler is None or dataset is not self.train_dataset or self.args.max_steps <= 0:
            return epoch_sampler
        batches = self.args.max_steps * self.args.gradient_accumulation_steps * self.args.world_size
        epochs = math.ceil(batches / max(len(epoch_sampler), 1))
        return ContinuousEpochsBatchSampler(epoch_sampler, epochs) if epochs > 1 else epoch_sampler
