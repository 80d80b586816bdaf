"""The trainer callback that marks each checkpoint complete, then rotates older checkpoints out."""

from __future__ import annotations

import os

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import rotate_checkpoints

from sbert_nonling.training.checkpoints import CHECKPOINT_PREFIX, write_complete_marker, write_failure


class CheckpointMarkerCallback(TrainerCallback):
    """Writes the :data:`~sbert_nonling.training.checkpoints.COMPLETE_MARKER` of every checkpoint once everything in
    it is written, then rotates older checkpoints out (``save_total_limit``).

    ``on_save`` fires after transformers has written the checkpoint (model, optimizer and schedule, RNG and trainer
    states) and after the callbacks added before this one have added their files (e.g. :class:`LossStateCallback`):
    the marker, listing every file with its size and SHA-256
    (:func:`~sbert_nonling.training.checkpoints.write_complete_marker`), is therefore the checkpoint's last file, and
    :func:`~sbert_nonling.training.checkpoints.newest_intact_checkpoint` resumes only from folders that hold one and
    still match it. A write failure raises :class:`~sbert_nonling.training.checkpoints.CheckpointWriteError` naming
    the folder and the free space.

    Rotation: transformers rotates inside its private ``_save_checkpoint``, before ``on_save``; with a plain
    ``SentenceTransformerTrainer`` and ``save_total_limit`` an older complete checkpoint can thus be deleted before
    the new one is marked. :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` defers transformers' rotation
    to this callback, which rotates only after the marker exists (with a plain trainer its rotation finds nothing
    left to delete).

    What it adds over transformers: a checkpoint is known complete (and verifiable) instead of merely present.
    Add it after every callback that writes into checkpoint folders.
    """

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if not args.should_save:
            return
        assert args.output_dir is not None  # TrainingArguments fills its default ("trainer_output")
        folder = os.path.join(args.output_dir, f"{CHECKPOINT_PREFIX}{state.global_step}")
        try:
            write_complete_marker(folder, state.global_step)
        except OSError as error:
            raise write_failure(folder, error) from error
        rotate_checkpoints(args.output_dir, args.save_total_limit, state.best_model_checkpoint, use_mtime=True)
