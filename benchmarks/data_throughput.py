"""How many DataLoader workers keep a GPU fed? Images / clips per second per worker, and the workers a paper-size step
needs.

Measured here, on the CPU, per DataLoader worker count (0, 1, 2; one torch thread per worker, persistent workers):

- images/s: CIFAR-10 jpgs from the shared data through the package's two-view dataset (``image_folder_dataset``:
  decode + two SimCLR augmentations at 224 px, the paper's size) and ``ImagePatchEmbed.preprocess`` of both views;
- clips/s: FSDD wavs through the audio dataset (``audio_folder_dataset``: decode) and ``AudioPatchEmbed.preprocess``
  (kaldi fbank, 1024 frames) of one view: AudioCSE's two views are the same clip, which the trainer
  (``ReuseIdenticalColumns``) turns into features once per batch.

The image rows are read as the trainer reads them: one :class:`~sbert_nonling.data.images.SeededRow` at a time, the
two views seeded by row and pass (exact resume). A last table prices that seeding: per image size (32 px, CIFAR's own
and the tiny recipes'; 224 px, the paper's), the median process ms of reading a row's two views seeded and as a plain
index (views from the global RNG), interleaved over ``--rounds``, and their ratio.

Each batch is fetched and prepared inside the DataLoader (in the collate function, as the trainer's collator does),
the first batch of each worker count is dropped (worker start-up), and the rate is items over the wall time of the
rest; worker counts are interleaved over ``--rounds`` (0 1 2, then 2 1 0), the medians reported. Per worker: the
faster of 0 and 1 workers (both prepare on one thread; with 2 workers on 2 cores, the main process and other jobs
compete for the cores).

No GPU step is measured here. The step time is a FLOP estimate: one VisualCSE step at the paper's batch (image step
48 x 2 views x 197 tokens + text step 64 x 2 x 32, BERT-base) is 12.2 TFLOP by the formula of docs/benchmarks.md
(AudioCSE 12.9, 211 tokens per clip view), at an **assumed** sustained 40 % of a GPU's dense bf16 peak (A100 312,
H100 SXM 989 TFLOP/s): ~98 ms (A100) / ~31 ms (H100) per step. The workers needed so that preparing one step's 48
images / clips takes under 5 % of the step (with workers running in parallel, ``ceil(data seconds / (0.05 x step
seconds))``) and, looser, to keep up at all (data seconds <= step seconds, the data then hidden behind the step).

Run: ``python benchmarks/data_throughput.py [--batch-size 8] [--batches 8] [--rounds 2] [--workers 0,1,2]
[--seeding-rows 100] [--quick]``. Prints two tables, then one JSON line. ``--quick``: 1 timed batch of 2 with 0 and
1 workers in 1 round and 4 seeded / plain rows, a run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Callable

import common
import torch
from modality_step_cost import step_flops
from torch.utils.data import DataLoader

from sbert_nonling import AudioPatchEmbed, ImagePatchEmbed
from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex
from sbert_nonling.data.images import SeededRow, TwoViewDataset, image_folder_dataset

#: Data under this share of a step (issue 7's goal, applied to a GPU step).
GOAL = 0.05
#: The paper's modality batch (images / clips per step) and the assumed sustained share of a GPU's bf16 peak.
PAPER_BATCH, SUSTAINED = 48, 0.40
GPU_PEAK_BF16_TFLOPS = {"A100": 312.0, "H100 SXM": 989.0}
#: ``--quick``: one timed batch of two items, no worker and one, one round.
QUICK = {"batch_size": 2, "batches": 1, "rounds": 1, "workers": "0,1", "seeding_rows": 4}
#: The image sizes of the seeding measurement: CIFAR-10's own (the tiny recipes) and the paper's.
SEEDING_SIZES = [32, 224]


def one_thread(_worker: int) -> None:
    torch.set_num_threads(1)


def items_per_second(dataset, prepare, batch_size: int, batches: int, workers: int) -> float:
    """Items per second through a DataLoader whose collate function fetches rows and prepares them."""
    loader = DataLoader(
        range(len(dataset)),
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
        collate_fn=functools.partial(fetch_and_prepare, dataset, prepare),
        persistent_workers=workers > 0,
        worker_init_fn=one_thread if workers else None,
        generator=torch.Generator().manual_seed(0),
    )
    iterator = iter(loader)
    next(iterator)  # start-up: worker processes, first decode
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    seconds = time.perf_counter() - start
    del iterator, loader
    return batches * batch_size / seconds


def fetch_and_prepare(dataset, prepare: Callable, rows: list[int]):
    """``prepare`` of ``rows`` read as the trainer reads them: a two-view image dataset one :class:`SeededRow` at a
    time (the sampler's first pass; the views seeded by row and pass), any other dataset in one read."""
    if isinstance(dataset, TwoViewDataset):
        items = [dataset[SeededRow(row, draw=0)] for row in rows]
        return prepare({column: [item[column] for item in items] for column in items[0]})
    return prepare(dataset[rows])


def row_seconds(dataset, rows: range, seeded: bool) -> list[float]:
    """Process seconds of reading each of ``rows`` (decode and two views) from a two-view image dataset, as the trainer
    reads it (``seeded``: a :class:`SeededRow`, the views drawn in a forked RNG seeded by row and pass) or as a plain
    index (the views drawn from the global RNG)."""
    seconds = []
    for row in rows:
        start = time.process_time()
        dataset[SeededRow(row, draw=0) if seeded else row]
        seconds.append(time.process_time() - start)
    return seconds


def seeding_cost(sizes: list[int], rows: int, rounds: int) -> list[dict]:
    """Per image size, the median ms of reading a row seeded and plain (interleaved over ``rounds``) and their ratio:
    what exact-resume seeding adds to a row's decode and augmentations."""
    results = []
    for size in sizes:
        dataset, _ = image_folder_dataset(
            common.DATA_DIR / "images" / "cifar10" / "train", image_size=size, limit_per_class=math.ceil(rows / 10)
        )
        candidates = {
            "seeded": functools.partial(row_seconds, dataset, range(rows), True),
            "plain": functools.partial(row_seconds, dataset, range(rows), False),
        }
        samples = common.interleave(candidates, rounds)
        seeded_ms, plain_ms = (1000 * common.median(samples[name]) for name in ("seeded", "plain"))
        results.append(
            {"image_size": size, "seeded_ms": seeded_ms, "plain_ms": plain_ms, "ratio": seeded_ms / plain_ms}
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8, help="items per DataLoader batch")
    parser.add_argument(
        "--batches", type=int, default=8, help="timed batches per worker count and round (after one start-up batch)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds over the worker counts (order reversed every other round)"
    )
    parser.add_argument("--workers", default="0,1,2", help="DataLoader worker counts")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the main process")
    parser.add_argument(
        "--seeding-rows", type=int, default=100, help="rows read seeded and plain per image size and round"
    )
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    worker_counts = [int(count) for count in args.workers.split(",")]
    needed = args.batch_size * (args.batches + 1) * 2  # enough rows that no epoch ends inside a measurement
    images, _ = image_folder_dataset(
        common.DATA_DIR / "images" / "cifar10" / "train", image_size=224, limit_per_class=math.ceil(needed / 10)
    )
    clips, _ = audio_folder_dataset(
        common.DATA_DIR / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=needed
    )
    image_front_end = ImagePatchEmbed(image_size=224, patch_size=16, embedding_dimension=768)
    audio_front_end = AudioPatchEmbed(embedding_dimension=768)

    def prepare_images(rows) -> list[dict]:
        return [image_front_end.preprocess(rows[column]) for column in ("view_1", "view_2")]

    def prepare_clips(rows) -> dict:
        return audio_front_end.preprocess(rows["view_1"])

    text_flops = step_flops("base", 2 * 64, 32)
    modalities = {
        "image": (images, prepare_images, text_flops + step_flops("base", 2 * PAPER_BATCH, 197)),
        "audio": (clips, prepare_clips, text_flops + step_flops("base", 2 * PAPER_BATCH, 211)),
    }
    rows = []
    for modality, (dataset, prepare, flops) in modalities.items():
        candidates = {
            workers: (
                lambda workers=workers: [
                    1.0 / items_per_second(dataset, prepare, args.batch_size, args.batches, workers)
                ]
            )
            for workers in worker_counts
        }
        rates = {
            workers: 1.0 / common.median(seconds)
            for workers, seconds in common.interleave(candidates, args.rounds).items()
        }
        per_worker = max(
            rate for workers, rate in rates.items() if workers <= 1
        )  # one process preparing on one thread
        data_seconds = PAPER_BATCH / per_worker  # one worker's seconds for one step's items
        for gpu, peak in GPU_PEAK_BF16_TFLOPS.items():
            step_seconds = flops / (SUSTAINED * peak * 1e12)
            rows.append(
                {
                    "modality": modality,
                    "items_per_second": {str(workers): rate for workers, rate in rates.items()},
                    "per_worker": per_worker,
                    "gpu": gpu,
                    "step_tflop": flops / 1e12,
                    "step_seconds": step_seconds,
                    "data_seconds_one_worker": data_seconds,
                    "workers_under_5pct": math.ceil(data_seconds / (GOAL * step_seconds)),
                    "workers_to_keep_up": math.ceil(data_seconds / step_seconds),
                }
            )
        print(f"{modality} done", flush=True)
    common.print_table(
        [
            "modality",
            *(f"items/s, {workers} workers" for workers in worker_counts),
            "GPU (40 % bf16)",
            "step TFLOP",
            "step ms",
            "data s / step / worker",
            "workers: keep up",
            "workers: < 5 %",
        ],
        [
            [
                row["modality"],
                *row["items_per_second"].values(),
                row["gpu"],
                row["step_tflop"],
                1000 * row["step_seconds"],
                row["data_seconds_one_worker"],
                row["workers_to_keep_up"],
                row["workers_under_5pct"],
            ]
            for row in rows
        ],
    )
    seeding = seeding_cost(SEEDING_SIZES, args.seeding_rows, args.rounds)
    print("\nA row's two views read seeded (as the trainer reads it) and plain, median ms:")
    common.print_table(
        ["image size", "seeded ms", "plain ms", "seeded / plain"],
        [[row["image_size"], row["seeded_ms"], row["plain_ms"], row["ratio"]] for row in seeding],
    )
    common.emit(
        {
            "benchmark": "data_throughput",
            "ratio": max(row["data_seconds_one_worker"] / row["step_seconds"] for row in rows),
            "goal": (
                f"data of one paper-size step under {GOAL:.0%} of a GPU step: the workers it needs (informational)"
            ),
            "met": None,
            "assumption": f"sustained {SUSTAINED:.0%} of dense bf16 peak: {GPU_PEAK_BF16_TFLOPS} TFLOP/s",
            "paper_batch": PAPER_BATCH,
            "batch_size": args.batch_size,
            "batches": args.batches,
            "rounds": args.rounds,
            "rows": rows,
            "seeding": seeding,
            "threads": args.threads,
        }
    )


if __name__ == "__main__":
    main()
