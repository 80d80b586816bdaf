"""The trainer callback that marks each checkpoint complete, then rotates older checkpoints out."""

from __future__ import annotations

import os

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import rotate_checkpoints

from sbert_nonling.training.checkpoints import CHECKPOINT_PREFIX, write_complete_marker, write_failure


class CheckpointMarkerCallback(TrainerCallback):
    """Writes the :data:`~sbert_nonling.training.checkpoints.COMPLETE_MARKER` of every checkpoint once everything in
    it is written, then keeps the ``save_total_limit`` newest checkpoints (and the best one), deleting older ones.

    ``on_save`` fires after transformers has written the checkpoint (model, optimizer and schedule, RNG and trainer
    states) and after the callbacks added before this one have added their files (e.g. :class:`LossStateCallback`):
    the marker, listing every file with its size and SHA-256
    (:func:`~sbert_nonling.training.checkpoints.write_complete_marker`), is therefore the checkpoint's last file, and
    :func:`~sbert_nonling.training.checkpoints.newest_intact_checkpoint` resumes only from folders that hold one and
    still match it. A write failure raises :class:`~sbert_nonling.training.checkpoints.CheckpointWriteError` naming
    the folder and the free space.

    Rotation is this callback's own, after the marker, so a failed or interrupted save never costs an earlier
    complete checkpoint. transformers rotates by ``TrainingArguments.save_total_limit`` inside its checkpoint writing,
    before any callback can mark the new checkpoint complete: with a plain ``SentenceTransformerTrainer``, leave
    ``save_total_limit`` out of the arguments and give it here.
    :class:`~sbert_nonling.training.trainer.NonLinguisticTrainer` does so with the limit of its arguments.

    Args:
        save_total_limit: how many checkpoints to keep (the best one of ``load_best_model_at_end`` always stays);
            None keeps them all.

    What it adds over transformers: a checkpoint is known complete (and verifiable) instead of merely present.
    Add it after every callback that writes into checkpoint folders.
    """

    def __init__(self, save_total_limit: int | None = None) -> None:
        self.save_total_limit = save_total_limit

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if not args.should_save:
            return
        assert args.output_dir is not None  # TrainingArguments fills its default ("trainer_output")
        folder = os.path.join(args.output_dir, f"{CHECKPOINT_PREFIX}{state.global_step}")
        try:
            write_complete_marker(folder, state.global_step)
        except OSError as error:
            raise write_failure(folder, error) from error
        rotate_checkpoints(args.output_dir, self.save_total_limit, state.best_model_checkpoint, use_mtime=True)
