"""Peak memory (RSS) of a VisualCSE step on a BERT-base-sized encoder: plain, gradient checkpointing, GradCache.

Each configuration runs in a fresh subprocess (``ru_maxrss`` is a per-process high-water mark): build the model,
record the RSS, run one training step (forward, backward, AdamW), record the peak. The paper's batch (text 64 x 32
tokens, images 48 x 224^2) takes minutes per step on this CPU, so by default a smaller batch is measured (text 16,
images 8) and the step's memory above the model (activations, gradients, Adam state) is extrapolated linearly in
the batch for activations — clearly labelled "extrapolated" in the table; ``--batch-size 64 --image-batch-size 48``
measures the real thing. Configurations:

- text step, SimCSE (MultipleNegativesRankingLoss-style SimCSELoss): plain / gradient checkpointing /
  CachedMultipleNegativesRankingLoss (GradCache, mini-batch 8: memory of a mini-batch, any batch size);
- image step, SupCon (UnpairedModalityContrastiveLoss): plain / gradient checkpointing /
  CachedUnpairedModalityContrastiveLoss (GradCache, mini-batch 4 views).

The ratio in the JSON line is the image step's peak with checkpointing / without (goal: < 1, the smaller the better).

Run: ``python benchmarks/memory.py [--size base] [--batch-size 16] [--image-batch-size 8] [--quick]``. Prints a table,
then one JSON line. ``--quick``: the tiny encoder, 2 sentences and 2 images per step, a run of seconds per
configuration that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

import common

PAPER_TEXT_BATCH, PAPER_IMAGE_BATCH = 64, 48
CONFIGS = [
    ("text", "plain"),
    ("text", "checkpointing"),
    ("text", "cached"),
    ("image", "plain"),
    ("image", "checkpointing"),
    ("image", "cached"),
]
IMAGE_MINI_BATCH = 4
#: ``--quick``: the tiny encoder, two rows per step, one thread.
QUICK = {"size": "tiny", "batch_size": 2, "image_batch_size": 2, "threads": 1}


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(modality: str, variant: str, batch: int, size: str) -> dict[str, float]:
    import torch
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
    )

    from sbert_nonling import (
        CachedUnpairedModalityContrastiveLoss,
        ImagePatchEmbed,
        SimCSELoss,
        UnpairedModalityContrastiveLoss,
    )
    from sbert_nonling.models import build_sentence_model

    common.quiet()
    hidden = common.ENCODER_SIZES[size][0]
    torch.manual_seed(0)
    model = build_sentence_model(
        common.encoder_dir(size),
        pooling="cls",
        max_seq_length=32,
        front_ends={"image": ImagePatchEmbed(image_size=224, patch_size=16, embedding_dimension=hidden)},
    )
    model.train()
    if variant == "checkpointing":
        model[0].encoder.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if modality == "text":
        sentences = [" ".join(["word"] * 40)] * batch  # truncated to 32 tokens: every row full length
        features = [model.preprocess(sentences), model.preprocess(sentences)]
        labels = None
        loss = (
            CachedMultipleNegativesRankingLoss(model, mini_batch_size=8) if variant == "cached" else SimCSELoss(model)
        )
    else:
        pixels = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))
        features = [
            model.preprocess(list(pixels), modality="image"),
            model.preprocess(list(pixels + 0.1), modality="image"),
        ]
        labels = torch.arange(batch) % 4
        if variant == "cached":
            loss = CachedUnpairedModalityContrastiveLoss(model, mode="supcon", mini_batch_size=IMAGE_MINI_BATCH)
        else:
            loss = UnpairedModalityContrastiveLoss(model, mode="supcon")
    optimizer = torch.optim.AdamW(loss.parameters(), lr=1e-6)
    before = current_rss_mib()
    value = loss(features, labels)
    value.backward()
    optimizer.step()
    trainable = sum(parameter.numel() for parameter in loss.parameters() if parameter.requires_grad)
    # gradients + Adam's two moments, fp32: the part of the step's memory that does not grow with the batch
    return {"model_rss_mib": before, "peak_rss_mib": rss_mib(), "fixed_mib": 3 * 4 * trainable / 2**20}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="base")
    parser.add_argument("--batch-size", type=int, default=16, help="sentences per text step (paper: 64)")
    parser.add_argument("--image-batch-size", type=int, default=8, help="images per image step (paper: 48)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = common.parse_arguments(parser, QUICK, argv)
    if args.child:
        modality, variant = args.child.split(":")
        common.set_threads(args.threads)
        batch = args.batch_size if modality == "text" else args.image_batch_size
        print(json.dumps(child(modality, variant, batch, args.size)))
        return

    common.encoder_dir(args.size)  # build once here so the children's build is not the peak; they rebuild their own
    results = {}
    for modality, variant in CONFIGS:
        command = [
            sys.executable,
            __file__,
            "--child",
            f"{modality}:{variant}",
            "--size",
            args.size,
            "--batch-size",
            str(args.batch_size),
            "--image-batch-size",
            str(args.image_batch_size),
            "--threads",
            str(args.threads),
        ]
        output = subprocess.run(command, capture_output=True, text=True, check=True, env={**os.environ}).stdout
        figures = json.loads(output.strip().splitlines()[-1])
        batch, paper = (
            (args.batch_size, PAPER_TEXT_BATCH) if modality == "text" else (args.image_batch_size, PAPER_IMAGE_BATCH)
        )
        step = figures["peak_rss_mib"] - figures["model_rss_mib"]
        # Extrapolation: gradients and Adam state are fixed; the rest (activations) grows linearly with the batch,
        # except under GradCache, which holds one mini-batch of activations whatever the batch.
        scale = 1.0 if variant == "cached" else paper / batch
        figures["step_mib"] = step
        figures["activation_mib"] = max(step - figures["fixed_mib"], 0.0)
        figures["extrapolated_peak_mib"] = (
            figures["model_rss_mib"] + figures["fixed_mib"] + figures["activation_mib"] * scale
        )
        results[f"{modality}:{variant}"] = figures

    print(
        f"encoder {args.size} {common.ENCODER_SIZES[args.size]}; measured at text {args.batch_size} x 32 tokens x 2 "
        f"views, images {args.image_batch_size} x 224^2 x 2 views; extrapolated to text {PAPER_TEXT_BATCH}, images "
        f"{PAPER_IMAGE_BATCH}"
    )
    common.print_table(
        [
            "step",
            "variant",
            "model RSS MiB",
            "peak RSS MiB",
            "grads+Adam MiB",
            "activations MiB",
            "extrapolated peak MiB",
        ],
        [
            [
                key.split(":")[0],
                key.split(":")[1],
                value["model_rss_mib"],
                value["peak_rss_mib"],
                value["fixed_mib"],
                value["activation_mib"],
                value["extrapolated_peak_mib"],
            ]
            for key, value in results.items()
        ],
    )
    ratio = results["image:checkpointing"]["peak_rss_mib"] / results["image:plain"]["peak_rss_mib"]
    common.emit(
        {
            "benchmark": "memory",
            "ratio": ratio,
            "goal": "< 1 (checkpointing lowers the image step's peak)",
            "met": ratio < 1,
            "image_cached_over_plain_at_paper_batch": results["image:cached"]["extrapolated_peak_mib"]
            / results["image:plain"]["extrapolated_peak_mib"],
            "results": results,
            "extrapolated": args.batch_size != PAPER_TEXT_BATCH or args.image_batch_size != PAPER_IMAGE_BATCH,
            "settings": {key: value for key, value in vars(args).items() if key != "child"},
        }
    )


if __name__ == "__main__":
    main()
