"""Stop training cleanly on SIGTERM / SIGINT (preemption, schedulers, Ctrl-C): finish the step, checkpoint, stop."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

#: The signals that ask a run to stop: what spot / preemptible machines and schedulers send, and Ctrl-C.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TrainingPreempted(RuntimeError):
    """Training stopped on a signal after writing a complete checkpoint; resume continues from it.

    Args:
        signal_number: the signal that stopped the run.
        checkpoint: the checkpoint folder written at the stop.
        resumable: False for the recipes that run a sequence of trainers and do not resume (multitask, pixel-linguist).
    """

    def __init__(self, signal_number: int, checkpoint: str, resumable: bool = True) -> None:
        self.signal_number = signal_number
        self.checkpoint = checkpoint
        if resumable:
            how = (
                "Continue with the same command plus --resume (options=RunOptions(resume=True) or "
                "trainer.train(resume_from_checkpoint=True))."
            )
        else:
            how = "This recipe runs a sequence of trainers and does not resume: start it again with --overwrite."
        super().__init__(
            f"Training stopped by {signal.Signals(signal_number).name}; {checkpoint} is a complete checkpoint. {how}"
        )


class PreemptionCallback(TrainerCallback):
    """Turns SIGTERM / SIGINT into a clean stop through the trainer's public control flags.

    Inside :meth:`handling_signals` the first signal is recorded (``stop_signal``); at the end of the optimizer step
    the trainer is told to save and stop (without loading the best checkpoint), and the caller raises
    :class:`TrainingPreempted`. A second signal exits at once (status 128 + signal number). Under DDP all processes
    stop after the same step.
    """

    def __init__(self) -> None:
        #: The signal that asked the run to stop, or None.
        self.stop_signal: int | None = None

    def _handle(self, signal_number: int, frame) -> None:
        name = signal.Signals(signal_number).name
        if self.stop_signal is not None:
            print(
                f"\n{name} again: exiting now; the checkpoint being written is incomplete and resume skips it.",
                file=sys.stderr,
                flush=True,
            )
            os._exit(128 + signal_number)  # at once: no clean-up that could touch the checkpoints
        self.stop_signal = signal_number
        print(
            f"\n{name}: finishing this step and writing a checkpoint (send it again to exit at once).",
            file=sys.stderr,
            flush=True,
        )

    @contextmanager
    def handling_signals(self) -> Iterator[None]:
        """Handle :data:`STOP_SIGNALS` inside the block (main thread only: Python delivers signals there) and put
        the previous handlers back after it."""
        self.stop_signal = None
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {number: signal.signal(number, self._handle) for number in STOP_SIGNALS}
        try:
            yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        if torch.distributed.is_available() and torch.distributed.is_initialized() and args.world_size > 1:
            flag = torch.tensor([self.stop_signal or 0], device=args.device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            self.stop_signal = int(flag.item()) or None
        if self.stop_signal is not None:
            control.should_save = True
            control.should_training_stop = True

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        """After the stop's checkpoint is written, the run ends without loading its best checkpoint: that is done when
        it resumes and finishes (``args`` is already saved in the checkpoint; ``NonLinguisticTrainer`` passes its own
        copy)."""
        if self.stop_signal is not None:
            args.load_best_model_at_end = False
