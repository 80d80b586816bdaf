"""Do Pixel Linguist's renders keep up at batch 768? The visual stage's data waits beside a simulated GPU step.

On an H100 the visual stage (PIXEL-base, 768 pairs per batch, 64 patches) takes about 225 ms per optimizer step, and
every batch renders 1,536 texts in a DataLoader worker. This script builds that stage as the package does (the
``pixel-linguist`` recipe: its tiny block, whose encoder is never run here, with the paper's 64 patches and batch
768, one ``swap`` run) on the shared wiki sample (11,913 sentences: 17 batches per epoch, so a run of 24 steps
crosses an epoch boundary), takes the DataLoader its trainer builds (sampler, collator, workers, pinned memory) and
reads it as transformers' training loop does (``set_epoch``, a new iterator per epoch), sleeping ``--step-ms`` after
each batch in place of the GPU step. It measures every wait for a batch:

- ``before``: the stage trained by ``NonLinguisticTrainer`` (each epoch a new pass: the workers run out of indices
  at its end, and the next epoch's first batch waits until one worker has rendered all of it);
- ``after``: the stage's own ``ContinuousEpochsTrainer`` (a step-capped run's epochs are one pass: the workers
  render across the boundary).

The two runs alternate (before, after, after, before, ...) in one process. The table gives the wait for the first
batch (before the first step: the workers start and each renders a whole batch), the data-wait share of the steps
after it (waits / (waits + steps x step)), the longest of those waits in steps and where it happened; the JSON line
adds the render rate of one worker at batch 768 (one batch collated in this process: renders + the float tensors).

Run: ``python benchmarks/pixel_data_wait.py [--steps 24] [--step-ms 225] [--workers 2] [--rounds 1] [--quick]``;
goal: no wait after the first batch longer than two steps. ``--quick``: batches of 8 from the first 24 sentences (3
per epoch), 5 steps of 10 ms, 1 worker, a run of seconds that still crosses epoch boundaries and checks the code (the
test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import os
import tempfile
import time
from pathlib import Path

import common

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.methods import build_pixel_linguist
from sbert_nonling.training import NonLinguisticTrainer

#: The paper's visual stage: 768 pairs per batch, 64 patches per rendered text.
BATCH_SIZE, MAX_PATCHES = 768, 64
#: The longest wait after the first batch that counts as keeping up, in steps.
GOAL_STEPS = 2
#: ``--quick``: small batches of a few sentences, short steps, one worker.
QUICK = {"batch_size": 8, "sentences": 24, "steps": 5, "step_ms": 10.0, "workers": 1}


def visual_stage(steps: int, workers: int, batch_size: int, text_file: Path):
    """The visual stage's first run (``swap``) and model at ``batch_size`` pairs, 64 patches, ``workers`` DataLoader
    workers, on the sentences of ``text_file``."""
    overrides = {
        "perturbation_sets": [["swap"]],
        "max_patches": MAX_PATCHES,
        "visual.batch_size": batch_size,
        "visual.max_steps": steps,
        "topical.max_steps": 0,
        "reasoning.max_steps": 0,
        "parallel.max_steps": 0,
        "dataloader_num_workers": workers,
        "compile": False,  # the eager run's batches (compile's auto would drop each epoch's short batch on a GPU)
    }
    plan = build_pixel_linguist(
        load_recipe("pixel-linguist", tiny=True, overrides=overrides), DataSources(text_file=text_file)
    )
    return plan.stages[0], plan.model


def batch_waits(trainer, steps: int, step_seconds: float) -> list[float]:
    """Seconds waited for each of ``steps`` batches of ``trainer``'s DataLoader, read epoch by epoch as transformers'
    training loop reads it, with a sleep of ``step_seconds`` after each batch in place of the training step."""
    loader = trainer.get_train_dataloader()
    waits: list[float] = []
    for epoch in range(math.ceil(steps / len(loader))):
        loader.set_epoch(epoch)
        iterator = iter(loader)
        while len(waits) < steps:
            start = time.perf_counter()
            batch = next(iterator, None)
            if batch is None:
                break  # the epoch's end: the next one starts a new iterator
            waits.append(time.perf_counter() - start)
            time.sleep(step_seconds)
    del iterator, loader  # the persistent workers end with their DataLoader
    gc.collect()
    return waits


def summary(waits: list[float], step_seconds: float) -> dict[str, float | int]:
    """The first batch's wait, and the share, longest wait (in steps) and its step of the waits after it."""
    later = waits[1:]
    longest = max(later)
    return {
        "first_batch_s": waits[0],
        "data_wait_share": sum(later) / (sum(later) + len(later) * step_seconds),
        "longest_wait_s": longest,
        "longest_wait_steps": longest / step_seconds,
        "longest_wait_at_step": later.index(longest) + 2,
    }


def one_run(stage, model, trainer_class: type, steps: int, step_seconds: float) -> list[list[float]]:
    """The waits of one run of ``stage`` trained by ``trainer_class`` (:func:`batch_waits`), as a one-run list."""
    stage.trainer_class = trainer_class
    return [batch_waits(stage.trainer(model), steps, step_seconds)]


def render_rate(stage, model, batch_size: int) -> dict[str, float]:
    """One batch of ``batch_size`` pairs collated here as one worker does it: seconds, and texts rendered per
    second."""
    trainer = stage.trainer(model)
    rows = [stage.train_dataset[index] for index in range(batch_size)]
    trainer.data_collator(rows)  # warm-up: fonts, glyph caches
    start = time.perf_counter()
    trainer.data_collator(rows)
    seconds = time.perf_counter() - start
    return {"batch_seconds": seconds, "texts_per_second": 2 * batch_size / seconds}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="batches read per run (17 per epoch of the wiki sample)")
    parser.add_argument("--step-ms", type=float, default=225.0, help="the simulated GPU step (H100: 225 ms)")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers (persistent, as the recipe sets)")
    parser.add_argument("--rounds", type=int, default=1, help="before / after pairs, alternating")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="pairs per batch (the paper's: 768)")
    parser.add_argument("--sentences", type=int, default=None, help="the first sentences of the wiki sample (all)")
    parser.add_argument("--threads", type=int, default=1)
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    step_seconds = args.step_ms / 1000
    os.chdir(tempfile.mkdtemp(prefix="pixel-data-wait-"))  # the trainers' output folders
    text_file = common.WIKI_FILE
    if args.sentences:
        text_file = Path("sentences.txt").resolve()
        text_file.write_text("\n".join(common.wiki_sentences(args.sentences)) + "\n", encoding="utf-8")
    stage, model = visual_stage(args.steps, args.workers, args.batch_size, text_file)
    rate = render_rate(stage, model, args.batch_size)
    candidates = {
        "before": functools.partial(one_run, stage, model, NonLinguisticTrainer, args.steps, step_seconds),
        "after": functools.partial(one_run, stage, model, stage.trainer_class, args.steps, step_seconds),
    }
    samples = common.interleave(candidates, args.rounds)  # name -> the waits of each of its runs
    rows = {name: [summary(waits, step_seconds) for waits in runs] for name, runs in samples.items()}
    table = []
    for name, results in rows.items():
        for result in results:
            table.append([name, *result.values()])
    common.print_table(
        ["run", "first batch s", "data-wait share", "longest wait s", "longest wait (steps)", "at step"], table
    )
    worst_after = max(result["longest_wait_steps"] for result in rows["after"])
    worst_before = max(result["longest_wait_steps"] for result in rows["before"])
    common.emit(
        {
            "benchmark": "pixel_data_wait",
            "ratio": worst_after / worst_before,
            "goal": f"after the first batch, no wait longer than {GOAL_STEPS} steps of {args.step_ms:.0f} ms",
            "met": worst_after <= GOAL_STEPS,
            "before": rows["before"],
            "after": rows["after"],
            "waits": samples,
            "render_one_worker": rate,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
