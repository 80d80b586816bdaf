"""What a VisualCSE / AudioCSE step costs next to a SimCSE step, at the paper's setting and with fewer image tokens.

One VisualCSE step is an image step (SupCon on 2 augmented views through the shared encoder) plus a text step
(unsupervised SimCSE); one SimCSE step is the text step alone. Candidates, each timed as forward + backward of the
package's own losses (``UnpairedModalityContrastiveLoss`` with merged views, ``SimCSELoss``) on a model in train mode:

- ``simcse``: the text step (the baseline, ratio 1);
- ``visualcse``: the paper's image step, 224 px, 196 patches + [CLS] per view, plus the text step;
- ``visualcse-keep50`` / ``visualcse-keep25``: patch dropout (``token_keep_ratio`` 0.5 / 0.25: 98 / 49 patches kept);
- ``visualcse-160px`` / ``visualcse-112px``: a lower resolution (100 / 49 patches), all tokens kept;
- ``visualcse-112px-keep50`` / ``visualcse-112px-keep25``: both (24 / 12 patches kept); ``112px-keep25`` is the
  ``visualcse-fast`` recipe;
- ``audiocse``, ``audiocse-keep50`` / ``-keep25`` / ``-keep10`` / ``-keep6``: the released audio layout (128 x 1024
  fbank, 210 patches + [CLS]) without / with patch dropout 50 / 25 / 10 / 6.25 % (105 / 52 / 21 / 13 patches kept),
  plus the text step; ``keep6`` is the ``audiocse-fast`` recipe.

Shapes: the paper's batches (text 64 x 2 views x 32 tokens, images / clips 48 x 2 views) scaled down by the same
factor so that the ratios keep the paper's proportions: ``--batch-size 16 --modality-batch-size 12`` on the mini
encoder (all-MiniLM-L6-v2's shape), ``--base-batch-size 8 --base-modality-batch-size 6`` on the BERT-base shape (random
weights).
Candidates are interleaved round after round (A B ... then ... B A) in one process, each warmed up once, and the
medians compared. Steps are timed in **CPU seconds of this process** (``time.process_time``, one torch thread by
default): on two cores shared with other jobs the wall time of one step swung by up to 10x between rounds, its CPU
time hardly. Each row also gives the FLOP ratio of the formula in docs/benchmarks.md (3 x [2 N T + 4 L h sum t^2]),
which does not depend on the machine. ``ratio`` / ``audio_ratio`` = VisualCSE-fast / AudioCSE-fast over SimCSE on the
first size; goal <= 1.5.

Run: ``python benchmarks/modality_step_cost.py [--sizes mini,base] [--rounds 2] [--threads 1] [--quick]``. Prints a
table, then one JSON line. ``--quick``: every variant on the tiny encoder, 2 sentences and 2 images / clips per step, 1
round, a run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import time

import common
import numpy as np
import torch
from PIL import Image

from sbert_nonling import AudioPatchEmbed, ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss
from sbert_nonling.models import build_sentence_model
from sbert_nonling.util.patch_dropout import kept_patch_count

#: name -> (modality, image size or None, token_keep_ratio); "simcse" has no modality step.
VARIANTS: dict[str, tuple[str | None, int | None, float]] = {
    "simcse": (None, None, 1.0),
    "visualcse": ("image", 224, 1.0),
    "visualcse-keep50": ("image", 224, 0.5),
    "visualcse-keep25": ("image", 224, 0.25),
    "visualcse-160px": ("image", 160, 1.0),
    "visualcse-112px": ("image", 112, 1.0),
    "visualcse-112px-keep50": ("image", 112, 0.5),
    "visualcse-112px-keep25": ("image", 112, 0.25),
    "audiocse": ("audio", None, 1.0),
    "audiocse-keep50": ("audio", None, 0.5),
    "audiocse-keep25": ("audio", None, 0.25),
    "audiocse-keep10": ("audio", None, 0.1),
    "audiocse-keep6": ("audio", None, 0.0625),
}
FAST = "visualcse-112px-keep25"
AUDIO_FAST = "audiocse-keep6"
GOAL = 1.5
#: ``--quick``: every variant on the tiny encoder, two rows per step, one round.
QUICK = {"sizes": "tiny", "batch_size": 2, "modality_batch_size": 2, "rounds": 1}


def step_flops(size: str, sequences: int, tokens: int) -> float:
    """Training FLOPs of ``sequences`` sequences of ``tokens`` tokens: 3 x (2 N T + 4 L h t^2 per sequence)."""
    hidden, layers, _, _ = common.ENCODER_SIZES[size]
    weights = 12 * layers * hidden * hidden
    return 3.0 * (2 * weights * sequences * tokens + 4 * layers * hidden * sequences * tokens * tokens)


def build_steps(
    size: str, text_batch: int, image_batch: int, variants: list[str]
) -> dict[str, tuple[object, float, int]]:
    """name -> (step function, FLOPs of the step, tokens per modality view) for one encoder size."""
    folder = common.encoder_dir(size)
    hidden = common.ENCODER_SIZES[size][0]
    generator = np.random.default_rng(0)
    labels = torch.arange(image_batch) % 4  # SupCon: a few positives per class
    sentences = common.wiki_sentences(text_batch)
    models, steps = {}, {}

    def model_for(modality: str | None, image_size: int | None):
        key = (modality, image_size)
        if key not in models:
            torch.manual_seed(0)
            front_ends = {}
            if modality == "image":
                front_ends["image"] = ImagePatchEmbed(image_size=image_size, patch_size=16, embedding_dimension=hidden)
            if modality == "audio":
                front_ends["audio"] = AudioPatchEmbed(
                    embedding_dimension=hidden, layout="released", freq_mask=48, time_mask=192
                )
            model = build_sentence_model(folder, pooling="cls", max_seq_length=32, front_ends=front_ends)
            models[key] = model.train()
        return models[key]

    for name in variants:
        modality, image_size, keep = VARIANTS[name]
        model = model_for(modality, image_size)
        text_loss = SimCSELoss(model)
        text_features = model.preprocess(sentences)
        text_tokens = text_features["attention_mask"].shape[1]
        flops = step_flops(size, 2 * text_batch, text_tokens)
        modality_step, view_tokens = None, 0
        if modality is not None:
            front_end = model[0].sub_modules[modality][0]  # shared by the variants of one model: set per step
            if modality == "image":
                pixels = generator.integers(0, 256, (image_batch, image_size, image_size, 3), dtype=np.uint8)
                inputs = [Image.fromarray(array) for array in pixels]
                patches = (image_size // 16) ** 2
            else:
                inputs = [
                    {"array": generator.standard_normal(163_840).astype(np.float32), "sampling_rate": 16000}
                    for _ in range(image_batch)
                ]
                patches = front_end.embeddings.patch_embeddings.num_patches
            features = model.preprocess(inputs, modality=modality)
            view_tokens = 1 + (kept_patch_count(patches, keep) if keep < 1 else patches)
            flops += step_flops(size, 2 * image_batch, view_tokens)
            modality_loss = UnpairedModalityContrastiveLoss(model, mode="supcon")

            def modality_step(loss=modality_loss, features=features, front_end=front_end, keep=keep):
                front_end.token_keep_ratio = keep
                loss([dict(features), dict(features)], labels).backward()

        def step(model=model, text_loss=text_loss, text_features=text_features, modality_step=modality_step):
            if modality_step is not None:
                modality_step()
            text_loss([dict(text_features), dict(text_features)], None).backward()
            model.zero_grad(set_to_none=True)

        steps[name] = (step, flops, view_tokens)
    return steps


def measure(
    size: str, text_batch: int, image_batch: int, variants: list[str], rounds: int, steps_per_round: int
) -> list[dict]:
    built = build_steps(size, text_batch, image_batch, variants)
    warmed: set[str] = set()

    def candidate(name: str, step) -> list[float]:
        warmup = 0 if name in warmed else 1
        warmed.add(name)
        return common.timed_steps(step, steps_per_round, warmup=warmup, clock=time.process_time)

    samples = common.interleave(
        {name: functools.partial(candidate, name, step) for name, (step, _, _) in built.items()}, rounds
    )
    base_seconds, base_flops = common.median(samples["simcse"]), built["simcse"][1]
    rows = []
    for name, (_, flops, view_tokens) in built.items():
        seconds = common.median(samples[name])
        rows.append(
            {
                "size": size,
                "variant": name,
                "text_batch": text_batch,
                "modality_batch": image_batch,
                "view_tokens": view_tokens,
                "seconds": seconds,
                "ratio": seconds / base_seconds,
                "flop_ratio": flops / base_flops,
                "samples": len(samples[name]),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="mini,base", help="encoder sizes, the first one gives `ratio`")
    parser.add_argument("--batch-size", type=int, default=16, help="mini: sentences per text step (paper 64)")
    parser.add_argument(
        "--modality-batch-size", type=int, default=12, help="mini: images / clips per modality step (paper 48)"
    )
    parser.add_argument("--base-batch-size", type=int, default=8, help="base: sentences per text step")
    parser.add_argument(
        "--base-modality-batch-size", type=int, default=6, help="base: images / clips per modality step"
    )
    parser.add_argument(
        "--base-variants",
        default="simcse,visualcse,visualcse-keep50,visualcse-112px-keep25,audiocse,audiocse-keep25,audiocse-keep6",
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds on the first size (one fewer on the next)")
    parser.add_argument("--steps", type=int, default=1, help="timed steps per candidate and round (after one warm-up)")
    parser.add_argument("--threads", type=int, default=1)
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    rows = []
    for index, size in enumerate(args.sizes.split(",")):
        if size == "base":
            variants, text_batch, image_batch = (
                args.base_variants.split(","),
                args.base_batch_size,
                args.base_modality_batch_size,
            )
        else:
            variants, text_batch, image_batch = list(VARIANTS), args.batch_size, args.modality_batch_size
        rounds = args.rounds if index == 0 else max(1, args.rounds - 1)
        rows += measure(size, text_batch, image_batch, variants, rounds, args.steps)
        print(f"{size} done", flush=True)
    common.print_table(
        ["size", "variant", "text x mod. batch", "tokens / view", "CPU s / step", "x SimCSE", "FLOPs x SimCSE"],
        [
            [
                row["size"],
                row["variant"],
                f"{row['text_batch']} x {row['modality_batch']}",
                row["view_tokens"] or "-",
                row["seconds"],
                row["ratio"],
                row["flop_ratio"],
            ]
            for row in rows
        ],
    )
    first = args.sizes.split(",")[0]
    fast, audio_fast = (
        next(row for row in rows if row["size"] == first and row["variant"] == name) for name in (FAST, AUDIO_FAST)
    )
    common.emit(
        {
            "benchmark": "modality_step_cost",
            "ratio": fast["ratio"],
            "audio_ratio": audio_fast["ratio"],
            "goal": f"VisualCSE-fast and AudioCSE-fast steps <= {GOAL}x a SimCSE step",
            "met": max(fast["ratio"], audio_fast["ratio"]) <= GOAL,
            "rows": rows,
            "threads": args.threads,
            "clock": "process_time",
        }
    )


if __name__ == "__main__":
    main()
