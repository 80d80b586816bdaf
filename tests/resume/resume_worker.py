"""Worker of tests/resume/test_resume.py: a tiny recipe run, optionally SIGKILLed at a given step or while saving a
given checkpoint (the kill is injected, the process really dies), optionally resumed."""

from __future__ import annotations

import argparse
import os
import signal

from transformers import Trainer

from sbert_nonling.training import NonLinguisticTrainer, train_recipe


def die_at_step(step: int) -> None:
    """SIGKILL this process when the trainer is about to take step ``step + 1``."""
    original = NonLinguisticTrainer.training_step

    def training_step(self, *args, **kwargs):
        if self.state.global_step == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *args, **kwargs)

    NonLinguisticTrainer.training_step = training_step


def die_while_saving(step: int) -> None:
    """SIGKILL this process while checkpoint ``step`` is half written (model and optimizers saved, RNG not)."""
    original = Trainer._save_rng_state

    def save_rng_state(self, output_dir):
        if self.state.global_step == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, output_dir)

    Trainer._save_rng_state = save_rng_state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recipe", choices=["visualcse", "visualcse-fast", "mcse"])
    parser.add_argument("--output", required=True)
    parser.add_argument("--text-file", required=True)
    parser.add_argument("--image-dir", required=True)
    parser.add_argument("--captions-file")
    parser.add_argument("--image-features")
    parser.add_argument("--die-at-step", type=int)
    parser.add_argument("--die-while-saving", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    if args.die_at_step is not None:
        die_at_step(args.die_at_step)
    if args.die_while_saving is not None:
        die_while_saving(args.die_while_saving)
    overrides = {"eval_steps": 2, "batch_size": 8}
    if args.recipe.startswith("visualcse"):  # visualcse-fast: patch dropout draws kept tokens from the global RNG
        overrides.update(modality_batch_size=8)
    train_recipe(
        args.recipe, args.output, text_file=args.text_file, image_dir=args.image_dir, captions_file=args.captions_file,
        image_features=args.image_features, tiny=True, max_steps=8, overrides=overrides, resume=args.resume,
    )


if __name__ == "__main__":
    main()
