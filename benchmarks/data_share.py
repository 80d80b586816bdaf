"""How much of a training step is data preparation? Data time per batch as a share of the step time, at full size.

Full size: BERT-base / PIXEL-base sized encoders (768 x 12 layers, random weights), 224^2 images (197 tokens),
64-patch rendered text, 1024-frame fbank (211 tokens). Per modality, measured A/B/A/B in one process:

- data: what the data loader and collator do for one batch — pixel: ``PixelRenderer`` on both columns (the model's
  ``preprocess``); image: decode + two SimCLR augmentations (``image_folder_dataset``) + the front-end's
  ``preprocess`` of both views; audio: decode (``audio_folder_dataset``) + kaldi fbank of both views.
- step: forward + backward + AdamW of the loss on already-prepared features (SymmetricInfoNCE /
  UnpairedModalityContrastiveLoss).

Both scale linearly with the batch, so the share hardly depends on it; the default batch is small so the run is
short on a CPU. Goal (issue 7): every share < 5 %. Then the image loop with DataLoader workers 0 vs 1: seconds per
step of the whole loop (next batch + preprocess + step), showing what a worker hides on this 2-core machine. Last,
MACD's caption batches: fetching and collating 64 captions (``--caption-batch-size``) with their 7 x 7 x 1280 region
features from ``caption_feature_dataset`` (fixed-shape column read as tensors) vs the same rows stored as nested lists
(its form before), whose conversion cost ~a quarter of a tiny-encoder MACD step. And a caption dataset in a dict of
datasets (MCSE, KDMCSE, DALR), 64 captions with MCSE's 2048-d global features: named as sentence-transformers' trainer
names each dataset of a dict (a transform, which serves the rows as Python lists) vs as ``NonLinguisticTrainer`` does
(``tensor_rows_with_dataset_name``: a stored column, the rows keep their tensors).

Run: ``python benchmarks/data_share.py [--batch-size 4] [--rounds 2] [--size base] [--caption-batch-size 64]
[--quick]``. Prints a table, then one JSON line. ``--quick``: the tiny encoder, batches of 2 (captions 4), 1 round, a
run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable

import common
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator
from torch.utils.data import DataLoader

from sbert_nonling import (
    AudioPatchEmbed,
    ImagePatchEmbed,
    SymmetricInfoNCE,
    UnpairedModalityContrastiveLoss,
)
from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex
from sbert_nonling.data.captions import caption_feature_dataset
from sbert_nonling.data.images import image_folder_dataset
from sbert_nonling.models import build_pixel_model, build_sentence_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.training.trainer import tensor_rows_with_dataset_name

GOAL = 0.05
#: ``--quick``: the tiny encoder, tiny batches, one round.
QUICK = {"size": "tiny", "batch_size": 2, "max_patches": 16, "rounds": 1, "loop_steps": 1, "caption_batch_size": 4}


def step_fn(model, loss, features, labels):
    optimizer = torch.optim.AdamW(loss.parameters(), lr=1e-6)

    def step() -> None:
        loss(features, labels).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="base")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-patches", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--loop-steps", type=int, default=3, help="steps per DataLoader-workers round")
    parser.add_argument("--caption-batch-size", type=int, default=64, help="MACD captions per collated batch")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable ratios on a shared machine)")
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    hidden, layers, heads, intermediate = common.ENCODER_SIZES[args.size]
    batch = args.batch_size
    torch.manual_seed(0)

    # 1. Pixel: render both columns vs a SymmetricInfoNCE step of a PIXEL-sized encoder.
    sentences = common.wiki_sentences(batch * 8)
    pixel_model = build_pixel_model(
        PixelEncoder.from_config(
            args.max_patches,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=intermediate,
        ),
        max_patches=args.max_patches,
    )
    pixel_features = [pixel_model.preprocess(sentences[:batch]), pixel_model.preprocess(sentences[batch : 2 * batch])]
    pixel_offset = [0]

    def pixel_data() -> None:
        start = (pixel_offset[0] % 6) * batch
        pixel_offset[0] += 1
        pixel_model.preprocess(sentences[start : start + batch])
        pixel_model.preprocess(sentences[start + batch : start + 2 * batch])

    pixel_step = step_fn(pixel_model, SymmetricInfoNCE(pixel_model), pixel_features, None)

    # 2. Image: decode + two augmentations + preprocess vs an image SupCon step through a BERT-base-sized encoder.
    folder = common.encoder_dir(args.size)
    image_model = build_sentence_model(
        folder,
        pooling="cls",
        front_ends={
            "image": ImagePatchEmbed(image_size=224, patch_size=16, embedding_dimension=hidden),
            "audio": AudioPatchEmbed(embedding_dimension=hidden),
        },
    )
    images, _ = image_folder_dataset(
        common.DATA_DIR / "images" / "cifar10" / "train", image_size=224, limit_per_class=20
    )
    image_offset = [0]

    def image_batch():
        rows = [(image_offset[0] * batch + index) % len(images) for index in range(batch)]
        image_offset[0] += 1
        return images[rows]

    def image_prepare(items) -> list[dict]:
        return [image_model.preprocess(items[column], modality="image") for column in ("view_1", "view_2")]

    first = image_batch()
    image_features = image_prepare(first)
    image_labels = torch.tensor(first["label"])
    image_step = step_fn(
        image_model, UnpairedModalityContrastiveLoss(image_model, mode="supcon"), image_features, image_labels
    )

    # 3. Audio: decode + fbank of both (identical) views vs an audio SupCon step.
    clips, _ = audio_folder_dataset(common.DATA_DIR / "audio" / "fsdd", label_from_regex(r"^(\d+)_"), limit=64)
    audio_offset = [0]

    def audio_batch():
        rows = [(audio_offset[0] * batch + index) % len(clips) for index in range(batch)]
        audio_offset[0] += 1
        return clips[rows]

    def audio_prepare(items) -> list[dict]:
        return [image_model.preprocess(items[column], modality="audio") for column in ("view_1", "view_2")]

    first_audio = audio_batch()
    audio_features = audio_prepare(first_audio)
    audio_step = step_fn(
        image_model,
        UnpairedModalityContrastiveLoss(image_model, mode="supcon"),
        audio_features,
        torch.tensor(first_audio["label"]),
    )

    def seconds(function) -> Callable[[], list[float]]:
        return functools.partial(common.timed_steps, function, 1, warmup=0)

    candidates = {
        "pixel data": seconds(pixel_data),
        "pixel step": seconds(pixel_step),
        "image data": seconds(lambda: image_prepare(image_batch())),
        "image step": seconds(image_step),
        "audio data": seconds(lambda: audio_prepare(audio_batch())),
        "audio step": seconds(audio_step),
        "audio fbank, one view": seconds(lambda: image_model.preprocess(audio_batch()["view_1"], modality="audio")),
        "image preprocess only": seconds(lambda: image_prepare(first)),
    }
    for function in (pixel_data, pixel_step, image_step, audio_step):  # warm-up: glyph caches, allocator, Adam state
        function()
    samples = common.interleave(candidates, args.rounds)
    medians = {name: common.median(values) for name, values in samples.items()}

    # 4. The image loop through a DataLoader, workers 0 vs 1 (the worker decodes and augments while the step runs).
    def loop(workers: int):
        def run() -> list[float]:
            loader = DataLoader(
                images,
                batch_size=batch,
                shuffle=True,
                num_workers=workers,
                collate_fn=lambda rows: rows,
                persistent_workers=False,
            )
            iterator = iter(loader)
            step_seconds = []
            for index in range(args.loop_steps + 1):
                start = time.perf_counter()
                rows = next(iterator)
                items = {column: [row[column] for row in rows] for column in ("view_1", "view_2")}
                image_model.preprocess(items["view_1"], modality="image")
                image_model.preprocess(items["view_2"], modality="image")
                image_step()
                if index:  # the first batch waits for the worker to start
                    step_seconds.append(time.perf_counter() - start)
            return step_seconds

        return run

    loops = common.interleave({"workers=0": loop(0), "workers=1": loop(1)}, args.rounds)
    loop_medians = {name: common.median(values) for name, values in loops.items()}

    # 5. MACD caption batches: collate region features from the fixed-shape tensor column vs from nested lists.
    caption_batch = args.caption_batch_size
    caption_count = 4 * caption_batch
    regions = torch.randn(caption_count, 49, 1280)  # the values do not matter for the cost, the shape does
    pairs = [(f"{index}.jpg", sentence) for index, sentence in enumerate(common.wiki_sentences(caption_count))]
    captions = caption_feature_dataset(pairs, [name for name, _ in pairs], regions)
    nested = Dataset.from_dict(
        {"anchor": captions["anchor"], "positive": captions["positive"], "label": regions.numpy()}
    )
    collator = SentenceTransformerDataCollator(preprocess_fn=lambda texts, **kwargs: {})
    caption_offset = [0]

    def caption_collate(dataset: Dataset):
        def run() -> list[float]:
            start_row = (caption_offset[0] % (caption_count // caption_batch)) * caption_batch
            caption_offset[0] += 1
            return common.timed_steps(
                lambda: collator(dataset.__getitems__(list(range(start_row, start_row + caption_batch)))), 1, warmup=0
            )

        return run

    collates = common.interleave(
        {"tensor column": caption_collate(captions), "nested lists": caption_collate(nested)}, args.rounds + 1
    )
    collate_medians = {name: common.median(values) for name, values in collates.items()}

    # 6. A caption dataset in a dict of datasets (MCSE, KDMCSE, DALR: one loss per dataset) with MCSE's 2048-d global
    # features, named as sentence-transformers' trainer names it (a transform: rows as Python lists) vs as
    # NonLinguisticTrainer does (a stored column: rows keep their tensors).
    global_captions = caption_feature_dataset(pairs, [name for name, _ in pairs], torch.randn(caption_count, 2048))
    transform_named = global_captions.with_format(None)
    transform_named.set_transform(
        functools.partial(SentenceTransformerTrainer.add_dataset_name_transform, dataset_name="captions")
    )
    stored_named = tensor_rows_with_dataset_name(global_captions, "captions")
    named = common.interleave(
        {"name by transform": caption_collate(transform_named), "name stored": caption_collate(stored_named)},
        args.rounds + 1,
    )
    named_medians = {name: common.median(values) for name, values in named.items()}

    shares = {
        modality: medians[f"{modality} data"] / medians[f"{modality} step"] for modality in ("pixel", "image", "audio")
    }
    print(
        f"encoder {args.size} {common.ENCODER_SIZES[args.size]}, batch {batch}, {args.threads} torch thread(s), "
        f"{args.rounds} rounds"
    )
    common.print_table(
        ["modality", "data s/batch", "step s", "data / step", "goal"],
        [
            [
                modality,
                medians[f"{modality} data"],
                medians[f"{modality} step"],
                f"{100 * share:.2f} %",
                f"< {100 * GOAL:.0f} %",
            ]
            for modality, share in shares.items()
        ],
    )
    print(
        f"image preprocess() of both views alone: {medians['image preprocess only']:.4f} s; audio fbank of one view: "
        f"{medians['audio fbank, one view']:.4f} s (measured here for both views; the trainer's collator computes it "
        f"once, the views being the same clip: ReuseIdenticalColumns)"
    )
    common.print_table(["image loop", "s/step"], [[name, value] for name, value in loop_medians.items()])
    collate_ratio = collate_medians["tensor column"] / collate_medians["nested lists"]
    common.print_table(
        [f"MACD caption batch ({caption_batch} x 49 x 1280 regions)", "s/batch"],
        [[name, value] for name, value in collate_medians.items()] + [["tensor column / nested lists", collate_ratio]],
    )
    named_ratio = named_medians["name stored"] / named_medians["name by transform"]
    common.print_table(
        [f"caption batch in a dict of datasets ({caption_batch} x 2048 features)", "s/batch"],
        [[name, value] for name, value in named_medians.items()] + [["stored / transform", named_ratio]],
    )
    worst = max(shares.values())
    common.emit(
        {
            "benchmark": "data_share",
            "ratio": worst,
            "goal": f"< {GOAL}",
            "met": worst < GOAL,
            "shares": shares,
            "seconds": medians,
            "image_loop_s_per_step": loop_medians,
            "caption_collate_s": collate_medians,
            "caption_collate_ratio": collate_ratio,
            "named_caption_collate_s": named_medians,
            "named_caption_collate_ratio": named_ratio,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
