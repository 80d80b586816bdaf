"""Does the ModalityRouter text path cost anything? Router model vs the same encoder as a plain Transformer + Pooling.

Both models load the same random-weight BERT folder (same weights, same tokenizer). Measured side by side, A/B/A/B:
the training step time in SentenceTransformerTrainer (MultipleNegativesRankingLoss on (s, s) pairs, as SimCSE) and
``encode`` throughput. Goals (issue 7): training ratio router / plain <= 1.02, encode ratio router / plain >= 0.98.
Also checks that ``export_text_model`` writes exactly a plain checkpoint (built-in modules only, same embeddings).

Run: ``python benchmarks/text_path_overhead.py [--size tiny|mini|base] [--batch-size 32] [--rounds 6] [--quick]``.
Prints a table, then one JSON line. ``--quick``: batches of 4, 1 timed step and 16 encoded sentences in 1 round, a run
of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import tempfile

import common
import numpy as np
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.losses import (
    MultipleNegativesRankingLoss,
)
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

from sbert_nonling import export_text_model
from sbert_nonling.models import build_sentence_model

TRAIN_GOAL, ENCODE_GOAL = 1.02, 0.98
#: ``--quick``: tiny batches, one timed step and a few encoded sentences in one round.
QUICK = {"batch_size": 4, "max_seq_length": 16, "steps": 1, "encode_sentences": 16, "rounds": 1}


def plain_model(folder: str, max_seq_length: int) -> SentenceTransformer:
    encoder = Transformer(folder, max_seq_length=max_seq_length)
    return SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), pooling_mode="cls")])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="tiny")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=6, help="timed trainer steps per round (after 2 warm-up steps)")
    parser.add_argument("--encode-sentences", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable ratios on a shared machine)")
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)

    folder = common.encoder_dir(args.size)
    sentences = common.wiki_sentences(max(args.encode_sentences, args.batch_size * (args.steps + 2)))
    models = {
        "router": build_sentence_model(folder, pooling="cls", max_seq_length=args.max_seq_length),
        "plain": plain_model(folder, args.max_seq_length),
    }
    train_rows = sentences[: args.batch_size * (args.steps + 2)]
    dataset = Dataset.from_dict({"anchor": train_rows, "positive": train_rows})
    output_dir = tempfile.mkdtemp(prefix="bench-text-path-")

    # 1. Training: a fresh trainer per round (steps 1-2 are warm-up), the models keep training across rounds.
    def train_round(name: str):
        def run() -> list[float]:
            clock = common.StepClock()
            model = models[name]
            trainer = SentenceTransformerTrainer(
                model=model,
                args=common.trainer_arguments(output_dir, args.steps + 2, args.batch_size),
                train_dataset=dataset,
                loss=MultipleNegativesRankingLoss(model),
                callbacks=[clock],
            )
            common.silence(trainer)
            trainer.train()
            return clock.step_seconds(skip=2)

        return run

    train = common.interleave({name: train_round(name) for name in models}, args.rounds)

    # 2. encode(): the whole list per round, seconds per sentence.
    encode_sentences = sentences[: args.encode_sentences]

    def encode_round(name: str):
        def run() -> list[float]:
            model = models[name]
            model.encode(encode_sentences[:64], batch_size=64)  # warm-up
            return [
                common.timed_steps(lambda: model.encode(encode_sentences, batch_size=64), 1, warmup=0)[0]
                / len(encode_sentences)
            ]

        return run

    encode = common.interleave({name: encode_round(name) for name in models}, args.rounds)

    # 3. The export is exactly a plain model: built-in modules only, and the same embeddings as the router model.
    router = models["router"].eval()
    export_dir = tempfile.mkdtemp(prefix="bench-export-")
    export_text_model(router, export_dir)
    exported = SentenceTransformer(export_dir)
    module_types = [type(module).__module__ + "." + type(module).__name__ for module in exported]
    plain_only = all(name.startswith("sentence_transformers.") for name in module_types)
    with torch.no_grad():
        difference = float(np.abs(router.encode(encode_sentences[:64]) - exported.encode(encode_sentences[:64])).max())

    train_ratio = common.median(train["router"]) / common.median(train["plain"])
    encode_ratio = (1 / common.median(encode["router"])) / (1 / common.median(encode["plain"]))
    print(
        f"encoder {args.size} {common.ENCODER_SIZES[args.size]}, batch {args.batch_size} x {args.max_seq_length} "
        f"tokens, {args.rounds} rounds A/B/B/A"
    )
    common.print_table(
        ["model", "train s/step", "encode sent/s", "train samples"],
        [[name, common.median(train[name]), 1 / common.median(encode[name]), len(train[name])] for name in models],
    )
    print(
        f"train ratio router/plain {train_ratio:.3f} (goal <= {TRAIN_GOAL}); encode ratio {encode_ratio:.3f} "
        f"(goal >= {ENCODE_GOAL}); export modules {module_types}, max |diff| {difference:.2e}"
    )
    common.emit(
        {
            "benchmark": "text_path_overhead",
            "ratio": train_ratio,
            "goal": f"<= {TRAIN_GOAL}",
            "met": train_ratio <= TRAIN_GOAL and encode_ratio >= ENCODE_GOAL and plain_only and difference < 1e-5,
            "train_ratio": train_ratio,
            "train_goal": TRAIN_GOAL,
            "encode_ratio": encode_ratio,
            "encode_goal": ENCODE_GOAL,
            "train_s_per_step": {name: common.median(values) for name, values in train.items()},
            "encode_sentences_per_s": {name: 1 / common.median(values) for name, values in encode.items()},
            "export_modules": module_types,
            "export_plain_only": plain_only,
            "export_max_abs_diff": difference,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
