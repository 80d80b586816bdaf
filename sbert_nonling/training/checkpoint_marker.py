"""The trainer callback that marks each checkpoint complete, then rotates older checkpoints out."""

from __future__ import annotations

import os

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import rotate_checkpoints

from sbert_nonling.training.checkpoints import CHECKPOINT_PREFIX, write_complete_marker, write_failure


class CheckpointMarkerCallback(TrainerCallback):
    """Writes the completion marker of every checkpoint (every file's size and SHA-256,
    :func:`~sbert_nonling.training.checkpoints.write_complete_marker`) once everything in it is written, then keeps
    the ``save_total_limit`` newest checkpoints (and the best one). Rotating after the marker, never before as
    transformers does, keeps earlier checkpoints through a failed save: with a plain trainer, give the limit here, not
    in the arguments (docs/reliability.md). Add it after every callback that writes into checkpoint folders.

    Args:
        save_total_limit: how many checkpoints to keep (the best one of ``load_best_model_at_end`` always stays);
            None keeps them all.
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
