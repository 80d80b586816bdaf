"""bf16 autocast vs fp32 training on the CPU: step speed-up on a mini-size encoder and loss curves side by side.

1. Speed: SimCSE steps (SimCSELoss, AdamW) on a MiniLM-shaped BERT (384 x 6 layers, random weights), fp32 vs
   ``torch.autocast("cpu", dtype=torch.bfloat16)``, A/B/A/B. Goal (issue 7): speed-up >= 1.8x.
2. Curves: two SentenceTransformerTrainer runs from the same weights, seed and batches, one with ``bf16=True`` in
   SentenceTransformerTrainingArguments (the trainer then trains under CPU autocast; on a GPU ``bf16=True`` or
   ``fp16=True`` configures AMP the same way), one in fp32; reports the largest and mean absolute difference of the
   logged losses. Default: the tiny encoder for 200 steps (the mini encoder for 200 steps takes ~10 minutes here:
   ``--curve-size mini``).

On a CPU without native bf16 matmul (AVX2 only: ``cpu_has_native_bf16()`` is false) autocast runs an emulated kernel
20-250x slower than fp32, so bf16 training steps would take minutes: the script then measures the speed-up on
the encoder's feed-forward matmul alone (same shape as in the step, A/B) and skips the curves, reporting
``native_bf16: false`` and the goal unmet. The package warns in that case too (``training_arguments``).

Run: ``python benchmarks/precision.py [--size mini] [--batch-size 32] [--rounds 3] [--curve-steps 200]
[--curve-size tiny] [--quick]``. Prints a table, then one JSON line. ``--quick``: the tiny encoder, batches of 4, 1
timed step in 1 round, curves of 3 steps, a run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import tempfile

import common
import torch
from datasets import Dataset

from sbert_nonling import SimCSELoss
from sbert_nonling.models import build_sentence_model
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.arguments import cpu_has_native_bf16

GOAL = 1.8
#: ``--quick``: the tiny encoder, tiny batches, one round, short curves.
QUICK = {
    "size": "tiny",
    "batch_size": 4,
    "max_seq_length": 16,
    "steps": 1,
    "rounds": 1,
    "curve_steps": 3,
    "curve_batch_size": 4,
}


def curve(folder: str, sentences: list[str], args, bf16: bool) -> tuple[list[float], float]:
    torch.manual_seed(0)
    model = build_sentence_model(folder, pooling="cls", max_seq_length=args.max_seq_length)
    loss = SimCSELoss(model)
    clock = common.StepClock()
    trainer = NonLinguisticTrainer(
        model=model,
        args=common.trainer_arguments(
            tempfile.mkdtemp(), args.curve_steps, args.curve_batch_size, bf16=bf16, learning_rate=1e-4
        ),
        train_dataset=Dataset.from_dict({"anchor": sentences, "positive": sentences}),
        loss=loss,
        callbacks=[clock],
    )
    common.silence(trainer)
    dtypes = set()  # what a Linear layer of the encoder really computes in during training
    linear = next(module for module in model.modules() if isinstance(module, torch.nn.Linear))
    hook = linear.register_forward_hook(lambda module, inputs, output: dtypes.add(str(output.dtype)))
    trainer.train()
    hook.remove()
    return clock.losses, common.median(clock.step_seconds(skip=2)), sorted(dtypes)


def matmul_speedup(args, hidden: int, intermediate: int) -> dict[str, list[float]]:
    """fp32 vs bf16 autocast on one feed-forward matmul of the step's shape (tokens x hidden @ hidden x intermediate),
    A/B."""
    tokens = torch.randn(args.batch_size * args.max_seq_length, hidden)
    weight = torch.randn(hidden, intermediate)

    def run(precision: str):
        context = contextlib.nullcontext
        if precision == "bf16":
            context = functools.partial(torch.autocast, "cpu", dtype=torch.bfloat16)

        def step() -> None:
            with context():
                torch.mm(tokens, weight)

        return functools.partial(common.timed_steps, step, 1, warmup=1)

    return common.interleave({"fp32": run("fp32"), "bf16": run("bf16")}, args.rounds)


def emulated(args) -> None:
    """The report of a CPU without native bf16: the matmul speed-up only (a bf16 training step would take minutes)."""
    hidden, _, _, intermediate = common.ENCODER_SIZES[args.size]
    samples = matmul_speedup(args, hidden, intermediate)
    speedup = common.median(samples["fp32"]) / common.median(samples["bf16"])
    capability = torch.backends.cpu.get_cpu_capability()
    print(
        f"this CPU ({capability}) has no native bf16 matmul: autocast is emulated; measured one "
        f"{args.batch_size * args.max_seq_length} x {hidden} @ {hidden} x {intermediate} matmul, {args.rounds} rounds"
    )
    common.print_table(
        ["precision", "s/matmul", "samples"],
        [[name, common.median(values), len(values)] for name, values in samples.items()],
    )
    print(f"bf16 speed-up {speedup:.4f}x (goal >= {GOAL}x): train in fp32 on this CPU; curves skipped")
    common.emit(
        {
            "benchmark": "precision",
            "ratio": speedup,
            "goal": f">= {GOAL}",
            "met": False,
            "native_bf16": False,
            "fp32_s_per_matmul": common.median(samples["fp32"]),
            "bf16_s_per_matmul": common.median(samples["bf16"]),
            "settings": vars(args),
        }
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(common.ENCODER_SIZES), default="mini")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=2, help="timed steps per round and precision")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--curve-size", choices=list(common.ENCODER_SIZES), default="tiny")
    parser.add_argument("--curve-steps", type=int, default=200)
    parser.add_argument("--curve-batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable ratios on a shared machine)")
    args = common.parse_arguments(parser, QUICK, argv)
    common.quiet()
    common.set_threads(args.threads)
    if not torch.cuda.is_available() and not cpu_has_native_bf16():
        emulated(args)
        return

    # 1. Speed: the same model and batch, fp32 vs bf16 autocast, interleaved.
    sentences = common.wiki_sentences(max(args.batch_size, args.curve_batch_size * args.curve_steps))
    torch.manual_seed(0)
    model = build_sentence_model(common.encoder_dir(args.size), pooling="cls", max_seq_length=args.max_seq_length)
    losses = {"fp32": SimCSELoss(model)}
    losses["bf16"] = losses["fp32"]
    optimizer = torch.optim.AdamW(losses["fp32"].parameters(), lr=3e-5)
    batch = sentences[: args.batch_size]

    def run(precision: str):
        context = contextlib.nullcontext
        if precision == "bf16":
            context = functools.partial(torch.autocast, "cpu", dtype=torch.bfloat16)

        def step() -> None:
            features = model.preprocess(batch)
            with context():
                value = losses[precision]([features, copy.copy(features)], None)
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return functools.partial(common.timed_steps, step, args.steps, warmup=1)

    model.train()
    samples = common.interleave({"fp32": run("fp32"), "bf16": run("bf16")}, args.rounds)
    speedup = common.median(samples["fp32"]) / common.median(samples["bf16"])

    # 2. Loss curves through the trainer, bf16=True vs fp32.
    folder = common.encoder_dir(args.curve_size)
    rows = sentences[: args.curve_batch_size * args.curve_steps]
    curve_fp32, trainer_fp32, dtypes_fp32 = curve(folder, rows, args, bf16=False)
    curve_bf16, trainer_bf16, dtypes_bf16 = curve(folder, rows, args, bf16=True)
    differences = [abs(a - b) for a, b in zip(curve_fp32, curve_bf16)]
    window = max(len(curve_fp32) // 10, 1)
    tail_fp32, tail_bf16 = (sum(values[-window:]) / window for values in (curve_fp32, curve_bf16))

    print(
        f"speed: encoder {args.size} {common.ENCODER_SIZES[args.size]}, batch {args.batch_size} x "
        f"{args.max_seq_length} tokens x 2 views, {args.threads} thread(s), {args.rounds} rounds"
    )
    common.print_table(
        ["precision", "s/step", "samples"],
        [[name, common.median(values), len(values)] for name, values in samples.items()],
    )
    print(f"bf16 speed-up {speedup:.2f}x (goal >= {GOAL}x)")
    print(
        f"curves: encoder {args.curve_size}, {args.curve_steps} trainer steps of {args.curve_batch_size} pairs, lr "
        "1e-4"
    )
    common.print_table(
        ["step", "fp32 loss", "bf16 loss"],
        [
            [index + 1, curve_fp32[index], curve_bf16[index]]
            for index in range(0, len(curve_fp32), max(len(curve_fp32) // 8, 1))
        ]
        + [["last 10 % mean", tail_fp32, tail_bf16]],
    )
    print(
        f"max |difference| {max(differences):.4f}, mean {sum(differences) / len(differences):.4f}; trainer s/step "
        f"fp32 {trainer_fp32:.4f}, bf16 {trainer_bf16:.4f}; Linear output dtypes in training: fp32 run {dtypes_fp32}, "
        f"bf16=True run {dtypes_bf16}"
    )
    common.emit(
        {
            "benchmark": "precision",
            "ratio": speedup,
            "goal": f">= {GOAL}",
            "met": speedup >= GOAL,
            "native_bf16": True,
            "fp32_s_per_step": common.median(samples["fp32"]),
            "bf16_s_per_step": common.median(samples["bf16"]),
            "curve_steps": len(curve_fp32),
            "curve_max_abs_diff": max(differences),
            "curve_mean_abs_diff": sum(differences) / len(differences),
            "curve_last_10pct_mean": {"fp32": tail_fp32, "bf16": tail_bf16},
            "trainer_linear_dtypes": {"fp32": dtypes_fp32, "bf16": dtypes_bf16},
            "trainer_s_per_step": {"fp32": trainer_fp32, "bf16": trainer_bf16},
            "curve_fp32": curve_fp32,
            "curve_bf16": curve_bf16,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
