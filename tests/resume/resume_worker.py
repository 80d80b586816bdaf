"""Worker of tests/resume/test_resume.py: a tiny recipe run through the CLI (``sbert-nonling train``), optionally
interrupted at a given step (SIGKILL, SIGTERM / SIGINT, a second signal while saving, a disk that refuses writes),
optionally resumed. The interruptions are injected at a known step, but they are real: a real signal to this
process, a real file-size limit on its writes."""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
from pathlib import Path

from sentence_transformers import SentenceTransformer
from transformers import Trainer

from sbert_nonling.cli import main as cli_main
from sbert_nonling.training import NonLinguisticTrainer


def at_step(step: int, action) -> None:
    """Call ``action()`` when the trainer is about to take step ``step + 1``."""
    original = NonLinguisticTrainer.training_step

    def training_step(self, *args, **kwargs):
        if self.state.global_step == step:
            action()
        return original(self, *args, **kwargs)

    NonLinguisticTrainer.training_step = training_step


def while_saving(step: int, action) -> None:
    """Call ``action()`` while checkpoint ``step`` is half written (model and optimizers saved, RNG state not)."""
    original = Trainer._save_rng_state

    def save_rng_state(self, output_dir):
        if self.state.global_step == step:
            action()
        return original(self, output_dir)

    Trainer._save_rng_state = save_rng_state


def while_saving_the_model(action, after: bool) -> None:
    """Call ``action()`` when the run's final save of ``OUT/model`` starts (``after=False``) or has written every
    file (``after=True``, before the folder takes its final name)."""
    original = SentenceTransformer.save

    def save(self, path, *args, **kwargs):
        final = Path(path).name.startswith("model")  # OUT/model (written as OUT/model.partial), not a checkpoint
        if final and not after:
            action()
        output = original(self, path, *args, **kwargs)
        if final and after:
            action()
        return output

    SentenceTransformer.save = save


def refuse_writes() -> None:
    """From now on, writing past the first KiB of any file fails with EFBIG (what a full disk does to a write)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer instead of failing the write
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def send(signal_number: int):
    def send_to_self() -> None:
        os.kill(os.getpid(), signal_number)

    return send_to_self


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recipe", choices=["visualcse", "visualcse-fast", "mcse", "kdmcse", "dalr"])
    parser.add_argument("--output", required=True)
    parser.add_argument("--text-file", required=True)
    parser.add_argument("--image-dir", required=True)
    parser.add_argument("--captions-file")
    parser.add_argument("--image-features")
    parser.add_argument("--die-at-step", type=int, help="SIGKILL during the step after this one")
    parser.add_argument("--die-while-saving", type=int, help="SIGKILL while writing this checkpoint")
    parser.add_argument("--signal", choices=["SIGTERM", "SIGINT"], default="SIGTERM")
    parser.add_argument("--signal-at-step", type=int, help="--signal during the step after this one")
    parser.add_argument("--signal-again-while-saving", type=int, help="--signal again while writing this checkpoint")
    parser.add_argument(
        "--disk-full-at-checkpoint", type=int, help="writes fail from the step before this checkpoint on"
    )
    parser.add_argument(
        "--die-while-saving-model", action="store_true", help="SIGKILL once OUT/model is written, before it is renamed"
    )
    parser.add_argument(
        "--disk-full-at-final-save", action="store_true", help="writes fail from the final save of OUT/model on"
    )
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    args = parser.parse_args()
    signal_number = signal.Signals[args.signal].value
    if args.die_at_step is not None:
        at_step(args.die_at_step, send(signal.SIGKILL))
    if args.die_while_saving is not None:
        while_saving(args.die_while_saving, send(signal.SIGKILL))
    if args.signal_at_step is not None:
        at_step(args.signal_at_step, send(signal_number))
    if args.signal_again_while_saving is not None:
        while_saving(args.signal_again_while_saving, send(signal_number))
    if args.die_while_saving_model:
        while_saving_the_model(send(signal.SIGKILL), after=True)
    if args.disk_full_at_final_save:
        while_saving_the_model(refuse_writes, after=False)
    if args.disk_full_at_checkpoint is not None:
        at_step(args.disk_full_at_checkpoint - 1, refuse_writes)
    command = [
        "train",
        args.recipe,
        "--output",
        args.output,
        "--text-file",
        args.text_file,
        "--image-dir",
        args.image_dir,
        "--tiny",
        "--max-steps",
        "8",
        "--set",
        "eval_steps=2",
        "--set",
        "batch_size=8",
        "--set",
        f"dataloader_num_workers={args.workers}",
    ]
    if args.recipe.startswith("visualcse"):  # visualcse-fast: patch dropout draws kept tokens from the global RNG
        command += ["--set", "modality_batch_size=8"]
    else:
        command += ["--captions-file", args.captions_file]
    if args.image_features:  # KDMCSE and DALR compute their tiny CLIP teacher's features themselves
        command += ["--image-features", args.image_features]
    sys.exit(cli_main(command + (["--resume"] if args.resume else [])))


if __name__ == "__main__":
    main()
