"""Step time vs batch size and vs sequence / patch length, per modality, so users can choose; plotted to a PNG.

Every point is one training step (forward + backward + AdamW, two views, the method's loss) of the same encoder
on prepared features, interleaved over rounds:

- batch size: text SimCSE at 32 tokens, batches 8 / 16 / 32 (``--batch-sizes``);
- text: 32 / 64 / 128 tokens; images: 112 / 160 / 224 px (50 / 101 / 197 tokens); pixel: 64 / 128 / 256 / 529
  patches (a separate ``PixelEncoder.from_config`` per length, text long enough to fill them); audio: the released
  layout (211 tokens) vs SSAST's (513 tokens); all at ``--batch-size``.

The JSON ratio is the cost of the paper's image setting relative to SimCSE text per sequence (197 vs 32 tokens):
ms per image view / ms per text view at batch ``--batch-size`` (goal: informational; attention makes it > 197 / 32).

Run: ``python benchmarks/scaling.py [--size tiny] [--batch-size 8] [--rounds 2] [--plot docs/benchmarks_scaling.png]
[--quick]``. Needs matplotlib for the plot (``pip install matplotlib``). Prints a table, then one JSON line.
``--quick``: batches of 2, two points per series, 1 round, the plot in the temporary folder (not over the docs' plot),
a run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import tempfile
from pathlib import Path

import common
import torch

from sbert_nonling import (
    AudioPatchEmbed,
    ImagePatchEmbed,
    SimCSELoss,
    SymmetricInfoNCE,
    UnpairedModalityContrastiveLoss,
)
from sbert_nonling.models import build_pixel_model, build_sentence_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder

#: ``--quick``: tiny batches, two points per series (text 32 tokens and images 224 px kept: the ratio's points), one
#: round, the plot written to the temporary folder.
QUICK = {
    "batch_size": 2,
    "batch_sizes": "2,4",
    "text_lengths": "16,32",
    "image_sizes": "32,224",
    "pixel_patches": "16,32",
    "rounds": 1,
    "plot": str(Path(tempfile.gettempdir()) / "benchmarks_scaling_quick.png"),
}


def make_step(loss, features, labels):
    optimizer = torch.optim.AdamW(loss.parameters(), lr=1e-6)

    def step() -> None:
        loss(features, labels).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="tiny")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batch-sizes", default="8,16,32")
    parser.add_argument("--text-lengths", default="32,64,128")
    parser.add_argument("--image-sizes", default="112,160,224")
    parser.add_argument("--pixel-patches", default="64,128,256,529")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--plot", default=str(common.REPO_DIR / "docs" / "benchmarks_scaling.png"))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable ratios on a shared machine)")
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    hidden, layers, heads, intermediate = common.ENCODER_SIZES[args.size]
    batch = args.batch_size
    torch.manual_seed(0)
    model = build_sentence_model(
        common.encoder_dir(args.size),
        pooling="cls",
        max_seq_length=512,
        front_ends={
            "image": ImagePatchEmbed(image_size=224, patch_size=16, embedding_dimension=hidden),
            "audio": AudioPatchEmbed(embedding_dimension=hidden, layout="released"),
        },
    )
    ssast = build_sentence_model(
        common.encoder_dir(args.size),
        pooling="cls",
        max_seq_length=512,
        front_ends={"audio": AudioPatchEmbed(embedding_dimension=hidden, layout="ssast")},
    )
    model.train()
    ssast.train()
    text_loss = SimCSELoss(model)
    long_text = " ".join(common.wiki_sentences(400))
    words = long_text.split()

    def text_features(rows: int, tokens: int):
        encoder = model[0].encoder
        encoder.max_seq_length = tokens
        sentences = [
            " ".join(words[index * 200 : index * 200 + 200]) for index in range(rows)
        ]  # longer than any length
        features = model.preprocess(sentences)
        return [features, dict(features)]

    points: dict[tuple[str, int], object] = {}  # (series, x) -> step
    tokens_of: dict[tuple[str, int], int] = {}
    for rows in map(int, args.batch_sizes.split(",")):
        points[("batch", rows)] = make_step(text_loss, text_features(rows, 32), None)
        tokens_of[("batch", rows)] = 32
    for length in map(int, args.text_lengths.split(",")):
        points[("text", length)] = make_step(text_loss, text_features(batch, length), None)
        tokens_of[("text", length)] = length
    labels = torch.arange(batch) % 4
    for pixels in map(int, args.image_sizes.split(",")):  # a front-end per size: preprocess resizes to its image_size
        image_model = build_sentence_model(
            common.encoder_dir(args.size),
            pooling="cls",
            front_ends={"image": ImagePatchEmbed(image_size=pixels, patch_size=16, embedding_dimension=hidden)},
        ).train()
        images = list(torch.randn(batch, 3, pixels, pixels, generator=torch.Generator().manual_seed(pixels)))
        features = [image_model.preprocess(images, modality="image") for _ in range(2)]
        points[("image", pixels)] = make_step(
            UnpairedModalityContrastiveLoss(image_model, mode="supcon"), features, labels
        )
        tokens_of[("image", pixels)] = 1 + (pixels // 16) ** 2
    waves = [
        {
            "array": torch.randn(16000 * 10, generator=torch.Generator().manual_seed(index)).numpy(),
            "sampling_rate": 16000,
        }
        for index in range(batch)
    ]
    for name, audio_model, tokens in (("released", model, 211), ("ssast", ssast, 513)):
        features = [audio_model.preprocess(waves, modality="audio") for _ in range(2)]
        points[("audio", tokens)] = make_step(
            UnpairedModalityContrastiveLoss(audio_model, mode="supcon"), features, labels
        )
        tokens_of[("audio", tokens)] = tokens
    for patches in map(int, args.pixel_patches.split(",")):
        pixel_model = build_pixel_model(
            PixelEncoder.from_config(
                patches,
                hidden_size=hidden,
                num_hidden_layers=layers,
                num_attention_heads=heads,
                intermediate_size=intermediate,
            ),
            max_patches=patches,
        )
        pixel_model.train()
        texts = [" ".join(words[index * 400 : index * 400 + 400]) for index in range(batch)]  # fills 529 patches
        features = [pixel_model.preprocess(texts), pixel_model.preprocess(texts[::-1])]
        points[("pixel", patches)] = make_step(SymmetricInfoNCE(pixel_model), features, None)
        tokens_of[("pixel", patches)] = patches + 1

    for step in points.values():  # warm-up
        step()
    samples = common.interleave(
        {key: functools.partial(common.timed_steps, step, 1, warmup=0) for key, step in points.items()}, args.rounds
    )
    seconds = {key: common.median(values) for key, values in samples.items()}

    rows = []
    for (series, x), value in seconds.items():
        rows_in_batch = x if series == "batch" else batch
        rows.append([series, x, tokens_of[(series, x)], rows_in_batch, value, 1000 * value / (2 * rows_in_batch)])
    print(
        f"encoder {args.size} {common.ENCODER_SIZES[args.size]}, {args.threads} thread(s), two views per row, "
        f"{args.rounds} rounds"
    )
    common.print_table(["series", "x", "tokens/seq", "rows", "s/step", "ms/sequence"], rows)

    text_ms = 1000 * seconds[("text", 32)] / (2 * batch) if ("text", 32) in seconds else float("nan")
    image_ms = 1000 * seconds[("image", 224)] / (2 * batch) if ("image", 224) in seconds else float("nan")
    plot_path = None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
    else:
        figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
        batch_points = sorted((x, value) for (series, x), value in seconds.items() if series == "batch")
        left.plot([x for x, _ in batch_points], [value for _, value in batch_points], "o-", label="text, 32 tokens")
        left.set_xlabel("batch size (rows; two views each)")
        left.set_ylabel("seconds per training step")
        left.set_title("step time vs batch size")
        left.legend()
        for series, label in (
            ("text", "text (tokens)"),
            ("image", "image (1 + patches)"),
            ("pixel", "pixel (1 + patches)"),
            ("audio", "audio (released 211, SSAST 513)"),
        ):
            series_points = sorted(
                (tokens_of[(name, x)], value) for (name, x), value in seconds.items() if name == series
            )
            if series_points:
                right.plot(
                    [x for x, _ in series_points],
                    [1000 * value / (2 * batch) for _, value in series_points],
                    "o-",
                    label=label,
                )
        right.set_xlabel("tokens per sequence")
        right.set_ylabel(f"ms per sequence (batch {batch})")
        right.set_xscale("log", base=2)
        right.set_yscale("log", base=2)
        right.set_title("cost per sequence vs length")
        right.legend()
        figure.suptitle(
            f"sbert_nonling training step, {args.size} encoder {common.ENCODER_SIZES[args.size]}, "
            f"{args.threads} CPU thread(s), {common.machine()['cpu']}"
        )
        figure.tight_layout()
        figure.savefig(args.plot, dpi=110)
        plot_path = args.plot
        print(f"plot: {plot_path}")
    common.emit(
        {
            "benchmark": "scaling",
            "ratio": image_ms / text_ms,
            "goal": "informational (image 197 tokens vs text 32 per view)",
            "met": None,
            "seconds_per_step": {f"{series}:{x}": value for (series, x), value in seconds.items()},
            "tokens_per_sequence": {f"{series}:{x}": value for (series, x), value in tokens_of.items()},
            "plot": plot_path,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
