"""Where a training step's time goes on a GPU (issue 33): ms per step, share of the card, data wait and peak memory.

Each method trains at the paper's batch on a BERT-base-shaped random encoder (768 x 12, built offline; Pixel Linguist:
the PIXEL-base shape), through its own plan and trainers as ``train_recipe`` builds them (no dev evaluation, no
checkpoints, a loss logged only after the last step), in bf16 autocast, in each of :data:`MODES`: eagerly, compiled and
compiled with CUDA graphs (``reduce-overhead``):

- simcse-unsup (64 sentences x 2 views x 32 tokens), VisualCSE's image step (48 images x 2 views at 224 px) and text
  step, AudioCSE's audio step (48 clips, 1,024 fbank frames) and text step, MCSE's text and caption steps (64 each;
  frozen efficientnet-lite0 image features), MACD's step (64 captions; one micro-batch, where the recipe accumulates
  8), KDMCSE's text and caption steps (64 each; 768-d CLIP features of a random CLIP), DALR's (128 each; two random
  BERT-base text teachers run on every caption batch), the multitask recipe's contrastive stage (64 NLI triplets) and
  multi-task stage (one batch of 32 of each task), Pixel Linguist's visual stage (768 pairs of 64-patch renders);
- beside them a plain sentence-transformers SimCSE step (``SentenceTransformerTrainer`` and its
  ``MultipleNegativesRankingLoss`` on (s, s), the simcse-unsup model, data and arguments) and, for every step of
  every method, a bare PyTorch loop of the same step: the same model, loss modules and batch, already on the device,
  forward, backward, clipping, the same fused AdamW, nothing else (no trainer, no DataLoader).

Per step kind it reports the median **ms per optimizer step** (a clock read after ``torch.cuda.synchronize``, so a
step's kernels have finished; on the CPU a plain clock), the **FLOPs** of the step (``FlopCounterMode`` over the loss
forward and backward of one batch, eagerly; a compiled step runs the same arithmetic) and the **share of the card**
(those FLOPs over the measured time, divided by the peak FLOP rate: a bf16 matmul measured at the start, or
``--peak-tflops``), the **data-wait share** (the time the trainer waits in ``get_batch_samples`` for the DataLoader,
over the steps' time) with the longest wait, and the **peak memory** of the timed steps (``torch.cuda.max_memory_
allocated``; on the CPU the process's peak resident set). The first ``--warmup`` steps of each kind (allocator,
AdamW state, compilation) are not timed.

Eager mode sets the method's ``compile`` setting off (its ``auto`` would compile on a GPU); the compiled modes set it
on (each training loss compiled with its model's forward, text padded to ``max_seq_length``, an epoch's short last
batch dropped) with ``--compile-backend`` (inductor; ``--quick``: aot_eager, which generates no code) and
``torch.compile``'s default mode (``compiled``) or ``reduce-overhead`` (CUDA graphs: a whole step replayed by one
launch); their rows add the run's mean training loss against the eager run's (``loss_rel_diff_eager``; the runs'
dropout draws differ, so it flags gross differences only). ``--modes`` defaults to all three on a GPU and to
``eager,compiled`` on the CPU (CUDA graphs need CUDA). Every row
is printed and appended to a JSON-lines file as it is measured (``--rows``, default
``runs/gpu_speed-<UTC time>.jsonl``); a failing run becomes a ``failed`` row and the script exits 1 at the end, after
the table and one JSON line (fields: docs/benchmarks.md, "GPU speed"). ``--device cpu --quick`` runs the same code on
the CPU at the recipes' tiny sizes (batch 8, 1 untimed and 2 timed steps per kind), which the test suite does.

Run: ``python benchmarks/gpu_speed.py [--device cuda|cpu] [--quick] [--steps 10] [--warmup 3] [--workers auto]
[--modes eager,compiled,reduce-overhead] [--compile-backend inductor] [--families simcse,...]
[--precision bf16] [--peak-tflops 989] [--rows FILE] [--shared DIR]``.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import common
import torch
from common import RowLog, isolated, peak_memory, prepare_inputs, reset_peak_memory
from gpu_check import missing_extra
from sentence_transformers.util import batch_to_device
from torch.utils.flop_counter import FlopCounterMode
from transformers import TrainerCallback

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources, FrozenCLIP, extract_clip_features
from sbert_nonling.data.captions import read_captions
from sbert_nonling.data.image_features import save_image_features
from sbert_nonling.methods import (
    BUILDERS,
    build_grounding,
    build_multitask,
    build_pixel_linguist,
    build_simcse,
    build_unpaired_modality,
)
from sbert_nonling.methods.plan import ModelUpdate
from sbert_nonling.models import build_tiny_clip
from sbert_nonling.training.arguments import cpu_has_native_bf16


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.gpu_run_parser(
        "gpu_speed",
        __doc__.splitlines()[0],
        quick="the recipes' tiny sizes, batch 8 (the CPU check)",
        steps="timed steps per step kind (default 10; --quick 2)",
    )
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps per step kind (default 3; --quick 1)")
    parser.add_argument(
        "--workers", default="auto", help="DataLoader workers: auto (8 per GPU, 0 on a CPU) or a number"
    )
    parser.add_argument(
        "--modes",
        default=None,
        help="comma-separated among eager, compiled, reduce-overhead (default: all three; on a CPU eager,compiled)",
    )
    parser.add_argument(
        "--precision", default="bf16", help="bf16 (fp32 on a CPU without native bf16), fp16 (GPU) or fp32"
    )
    parser.add_argument(
        "--compile-backend", default=None, help="torch.compile backend (default inductor; --quick: aot_eager)"
    )
    parser.add_argument("--peak-tflops", type=float, default=None, help="the card's peak (default: a matmul measures)")
    return parser.parse_args(argv)


#: The ways a step runs: mode name -> the ``torch.compile`` mode of its compiled losses ("eager": not compiled).
MODES = {"eager": None, "compiled": None, "reduce-overhead": "reduce-overhead"}
FAMILIES = ("simcse", "visualcse", "audiocse", "mcse", "macd", "kdmcse", "dalr", "multitask", "pixel-linguist")
#: PIXEL-base's encoder shape (Team-PIXEL/pixel-base: ViT-MAE, 768 x 12 layers x 12 heads).
PIXEL_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
#: The step kinds of one training run of each family that has several (its batches' datasets; default one).
STEP_KINDS = {"visualcse": 2, "audiocse": 2, "mcse": 3, "kdmcse": 3, "dalr": 3}
#: Issue 33's goals on an H100 at the paper's batch in bf16: (family, step) -> ms per step, and the pixel data wait.
STEP_GOALS_MS = {("simcse", "train"): 15.0, ("visualcse", "image"): 25.0}
PIXEL_DATA_WAIT_GOAL = 0.05
#: The side of the square matmul that measures the peak FLOP rate, and its repetitions (GPU / CPU).
PEAK_MATMUL = {"cuda": (8192, 50), "cpu": (1024, 5)}


def synchronize(device: torch.device) -> None:
    """Wait until ``device`` has run every queued kernel (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_tflops(device: torch.device, dtype: torch.dtype) -> float:
    """The TFLOP/s of a square matmul of :data:`PEAK_MATMUL`'s size in ``dtype`` on ``device``."""
    size, repetitions = PEAK_MATMUL[device.type]
    left = torch.randn(size, size, device=device, dtype=dtype)
    right = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        left @ right
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repetitions):
        left @ right
    synchronize(device)
    return 2 * size**3 * repetitions / (time.perf_counter() - start) / 1e12


def speed_inputs(root: Path, quick: bool) -> dict[str, Path]:
    """The data: :func:`common.prepare_inputs` (with ``quick``: all of it; else 400 Flickr8k photos), twice as many
    wiki sentences as photos (MCSE's text), and at the paper's batch the whole wiki sample, the NLI triplets and the
    STS / SICK files of the shared folder."""
    images = 12 if quick else 400
    inputs = prepare_inputs(root, quick, images=images)
    # MCSE puts a caption batch (one photo a row) after every len(text) // len(captions) text batches: two here
    inputs["caption_sentences"] = root / "caption_sentences.txt"
    inputs["caption_sentences"].write_text("\n".join(common.wiki_sentences(2 * images)) + "\n", encoding="utf-8")
    # KDMCSE / DALR train on every caption (five a photo): ten sentences a photo give the same two text batches
    inputs["clip_sentences"] = root / "clip_sentences.txt"
    inputs["clip_sentences"].write_text("\n".join(common.wiki_sentences(10 * images)) + "\n", encoding="utf-8")
    if not quick:  # CLIP ViT-L/14's width (768), from a random CLIP: no Hub download; the values do not matter here
        inputs["clip_features"] = clip_features(inputs["flickr"], root / "clip")
    if not quick:
        data = common.DATA_DIR
        inputs.update(wiki=common.WIKI_FILE, nli=data / "corpus" / "snli_devtest_triplets.csv", tasks=data / "sts")
    return inputs


def clip_features(flickr: Path, folder: Path) -> Path:
    """The 768-d CLIP features of the Flickr photos and captions under ``flickr`` from a random CLIP, saved in
    ``folder``: the shapes KDMCSE and DALR train on, without CLIP ViT-L/14's download."""
    captions = list(dict.fromkeys(caption for _, caption in read_captions(flickr / "captions.txt")))
    clip = FrozenCLIP.from_pretrained(str(build_tiny_clip(folder / "model", captions, projection_dim=768)))
    names = sorted(path.name for path in (flickr / "images").iterdir())
    features = extract_clip_features([flickr / "images" / name for name in names], captions, clip)
    return save_image_features(folder / "features.safetensors", names, features, captions=captions)


def speed_plan(family: str, inputs: dict[str, Path], settings: dict, steps: int, quick: bool):
    """``family``'s plan with ``settings`` and ``steps`` optimizer steps per training run: the paper's batch on the
    BERT-base (PIXEL-base) shape, or with ``quick`` the recipe's tiny block at batch 8."""
    data = common.DATA_DIR
    shape = {} if quick else {"model": common.encoder_dir("base")}  # a random BERT-base folder instead of the Hub's
    batch = {"batch_size": 8} if quick else {}
    if family == "simcse":
        config = load_recipe("simcse-unsup", tiny=quick, overrides={**settings, **shape, **batch, "max_steps": steps})
        return build_simcse(config, DataSources(text_file=inputs["wiki"]))
    if family in ("visualcse", "audiocse"):
        overrides = {**settings, **shape, **batch, "max_steps": 2 * steps}  # one modality step, one text step
        if quick:
            overrides["modality_batch_size"] = 4
        if family == "visualcse":
            overrides["images_per_class"] = 2 if quick else 30
            if not quick:
                overrides["vit"] = None  # a random patch embedding: no Hub ViT
            config = load_recipe("visualcse", tiny=quick, overrides=overrides)
            sources = DataSources(text_file=inputs["wiki"], image_dir=data / "images" / "cifar10" / "train")
            return build_unpaired_modality(config, sources)
        overrides["clips"] = 16 if quick else 480
        config = load_recipe("audiocse", tiny=quick, overrides=overrides)
        sources = DataSources(
            text_file=inputs["wiki"], audio_dir=data / "audio" / "fsdd", audio_label_regex=r"^\d+_([a-z]+)_"
        )
        return build_unpaired_modality(config, sources)
    if family in ("mcse", "macd"):
        overrides = {
            **settings,
            **shape,
            "batch_size": 6 if quick else 64,
            "max_steps": 3 * steps if family == "mcse" else steps,  # MCSE: two text steps, then a caption step
            "gradient_accumulation_steps": 1,
            "image_encoder": "efficientnet-lite0",  # installable offline; the frozen features are precomputed
            "image_dimension": 1280,
        }
        config = load_recipe(family, tiny=quick, overrides=overrides)
        flickr = inputs["flickr"]
        sources = DataSources(
            captions_file=flickr / "captions.txt", image_dir=flickr / "images", text_file=inputs["caption_sentences"]
        )
        return build_grounding(config, sources)
    if family in ("kdmcse", "dalr"):
        overrides = {**settings, **shape, "batch_size": 6 if quick else 64, "max_steps": 3 * steps}
        if family == "dalr" and not quick:  # two random BERT-base teachers instead of the Hub's SimCSE and DiffCSE
            overrides.update(batch_size=128, teachers=[common.encoder_dir("base")] * 2)
        config = load_recipe(family, tiny=quick, overrides=overrides)
        flickr = inputs["flickr"]
        sources = DataSources(
            captions_file=flickr / "captions.txt",
            image_dir=flickr / "images",
            image_features=inputs.get("clip_features"),
            text_file=inputs["clip_sentences"],
        )
        return BUILDERS[family](config, sources)
    if family == "multitask":
        stage_batch = {"contrastive.batch_size": 8, "multitask.batch_size": 8} if quick else {}
        overrides = {
            **settings,
            **shape,
            **stage_batch,
            "train_limit": 48 if quick else 2000,
            "contrastive.max_steps": steps,
            "multitask.max_steps": steps,
        }
        config = load_recipe("multitask", tiny=quick, overrides=overrides)
        return build_multitask(config, DataSources(nli_file=inputs["nli"], sts_dir=inputs["tasks"]))
    if family == "pixel-linguist":
        overrides = {
            **settings,
            "perturbation_sets": [["swap"]],
            "visual.max_steps": steps,
            "topical.max_steps": 0,
            "reasoning.max_steps": 0,
            "parallel.max_steps": 0,
        }
        if quick:
            overrides["visual.batch_size"] = 8
        else:  # the paper's 64 patches and batch 768 on PIXEL-base's shape (the tiny block builds a random encoder)
            overrides.update({"tiny_encoder": PIXEL_BASE, "max_patches": 64, "visual.batch_size": 768})
        config = load_recipe("pixel-linguist", tiny=True, overrides=overrides)
        return build_pixel_linguist(config, DataSources(text_file=inputs["wiki"]))
    raise ValueError(f"Unknown family {family!r}; valid families are: {list(FAMILIES)}")


class StepRecord(TrainerCallback):
    """Per optimizer step of a run: the clock after its end (``synchronize`` first), the time its trainer waited for
    the DataLoader (``waits``: filled by :func:`recording`), the datasets of its batches and, per kind of step, the
    batches of the last one; the peak memory from step ``warmup`` on.

    Args:
        device: The training device.
        warmup: The untimed steps of each kind of step.
        kinds: The kinds of step of the run (the peak memory is read from step ``warmup * kinds`` on).
        clock: The clock of the step ends and waits: wall time, or ``time.process_time`` (this process's CPU
            seconds, which other jobs on the cores hardly move).
    """

    def __init__(
        self, device: torch.device, warmup: int, kinds: int = 1, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.device = device
        self.clock = clock
        self.warmup = warmup
        self.untimed_steps = warmup * kinds
        self.ends: list[float] = []
        self.waits: list[float] = []
        self.kinds: list[str] = []
        self.batches: dict[str, list[dict]] = {}
        self.current: list[dict] = []
        self.peak_mib = float("nan")

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.untimed_steps:
            reset_peak_memory(self.device)

    def on_step_end(self, args, state, control, **kwargs):
        synchronize(self.device)
        self.ends.append(self.clock())
        kind = "+".join(dict.fromkeys(str(batch.get("dataset_name") or "train") for batch in self.current))
        self.kinds.append(kind)
        self.batches[kind] = self.current
        self.current = []

    def on_train_end(self, args, state, control, **kwargs):
        self.peak_mib = peak_memory(self.device)

    def step_times(self) -> dict[str, dict[str, list]]:
        """Per kind of step, the seconds, data waits and positions in the run (``steps``, from 0) of its timed steps:
        all but its first ``warmup`` (and the run's first step, whose start is not recorded)."""
        times: dict[str, dict[str, list]] = {}
        seen: dict[str, int] = {}
        for index, kind in enumerate(self.kinds):
            seen[kind] = seen.get(kind, 0) + 1
            if index == 0 or seen[kind] <= self.warmup:
                continue
            kind_times = times.setdefault(kind, {"seconds": [], "waits": [], "steps": []})
            kind_times["seconds"].append(self.ends[index] - self.ends[index - 1])
            kind_times["waits"].append(self.waits[index])
            kind_times["steps"].append(index)
        return times


def recording(trainer_class: type, record: StepRecord) -> type:
    """``trainer_class`` timing its waits for the DataLoader and handing each training batch to ``record``."""

    class Recording(trainer_class):
        def get_batch_samples(self, epoch_iterator, num_batches, device):
            start = record.clock()
            batches = super().get_batch_samples(epoch_iterator, num_batches, device)
            record.waits.append(record.clock() - start)
            return batches

        def training_step(self, model, inputs, num_items_in_batch=None):
            record.current.append(dict(inputs))  # compute_loss pops "dataset_name": keep it
            return super().training_step(model, inputs, num_items_in_batch)

    return Recording


def step_flops(trainer, batches: list[dict], device: torch.device, dtype: torch.dtype | None) -> int:
    """The FLOPs of one step's loss forward and backward on ``batches`` (``FlopCounterMode``), under ``dtype``
    autocast as in training (None: fp32; the count does not depend on it, the memory does); the gradients are cleared
    afterwards."""
    autocast = torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None)
    with FlopCounterMode(display=False) as counter, autocast:
        for batch in batches:
            batch = batch_to_device(dict(batch), device)
            name = batch.pop("dataset_name", None)
            loss_fn = trainer.loss[name] if isinstance(trainer.loss, dict) else trainer.loss
            features, labels = trainer.collect_features(batch)
            loss = loss_fn(features, labels)
            loss = sum(loss.values()) if isinstance(loss, dict) else loss
            loss.backward()
    trainer.model.zero_grad(set_to_none=True)
    for module in trainer.loss.values() if isinstance(trainer.loss, dict) else [trainer.loss]:
        module.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def bare_seconds(
    trainer,
    steps: list[list[dict]],
    device: torch.device,
    dtype: torch.dtype | None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Seconds of a bare-loop step (:func:`common.bare_step`, the same fused AdamW) on each step's batches of
    ``steps``, moved to ``device`` first, under ``dtype`` autocast (None: fp32), after one untimed step on the first,
    read from ``clock``."""
    on_device = iter([[batch_to_device(dict(batch), device) for batch in batches] for batches in steps[:1] + steps])
    optimizer, scheduler = common.bare_optimizer(trainer, steps[0][0].get("dataset_name"))

    def step() -> None:
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            common.bare_step(trainer, next(on_device), optimizer, scheduler)
        synchronize(device)

    return common.timed_steps(step, len(steps), warmup=1, clock=clock)


def figures(seconds: list[float], flops: int, peak_tflops: float) -> dict:
    """The median ms per step, the achieved TFLOP/s and its share of the peak."""
    median = common.median(seconds)
    tflops = flops / median / 1e12 if flops else float("nan")
    return {
        "ms_per_step": 1000 * median,
        "ms_steps": [1000 * value for value in seconds],
        "flops_per_step": flops,
        "tflops": tflops,
        "share_of_peak": tflops / peak_tflops,
    }


def measure_family(family: str, mode: str, inputs: dict[str, Path], options: dict, flops: dict, work: Path) -> dict:
    """One run of ``family`` in ``mode``: a row per stage and kind of step (and, eagerly, its bare loop's row)."""
    reason = missing_extra(family)
    if reason:
        return {"status": "skipped", "reason": reason}
    settings = {
        "precision": options["precision"],
        "dataloader_num_workers": options["workers"],
        "compile": mode != "eager",  # compiled: text padded to max_seq_length (the padding setting's auto)
    }
    steps, warmup, device = options["steps"], options["warmup"], options["device"]
    plan = speed_plan(family, inputs, settings, warmup + steps, options["quick"])
    rows = []
    for index, stage in enumerate(plan.stages):  # as MethodPlan.train runs them, each stage timed
        if isinstance(stage, ModelUpdate):
            stage.apply(plan.model)
            continue
        if stage.args.max_steps == 0:
            continue  # a stage left out
        record = StepRecord(device, warmup, kinds=STEP_KINDS.get(family, 1))
        stage.trainer_class = recording(stage.trainer_class, record)
        stage.args.eval_strategy, stage.args.load_best_model_at_end = "no", False
        stage.args.compile_backend, stage.args.compile_mode = options["compile_backend"], MODES[mode]
        start = common.QuietTraining(record, work / f"{family}-{mode}-{index}", stage.args.max_steps)
        loss = stage.run(plan.model, before_training=start).training_loss
        trainer, times = start.trainer, record.step_times()
        for kind, measured in times.items():
            key = (family, stage.name, kind)
            if mode == "eager":
                flops[key] = step_flops(trainer, record.batches[kind], device, options["dtype"])
            row = {
                "stage": stage.name,
                "step": kind,
                "status": "passed",
                **figures(measured["seconds"], flops.get(key, 0), options["peak_tflops"]),
                "data_wait_share": sum(measured["waits"]) / sum(measured["seconds"]),
                "longest_data_wait_ms": 1000 * max(measured["waits"]),
                "peak_mib": record.peak_mib,
                "workers": trainer.args.dataloader_num_workers,
                "train_loss": loss,
            }
            if mode == "eager":
                seconds = bare_seconds(trainer, [record.batches[kind]] * steps, device, options["dtype"])
                bare = {"check": "bare", "stage": stage.name, "step": kind, "status": "passed"}
                rows.append({**bare, **figures(seconds, flops[key], options["peak_tflops"])})
                row["x_bare"] = row["ms_per_step"] / rows[-1]["ms_per_step"]
            rows.append(row)
    return {"status": "passed", "rows": rows}


def measure_plain_simcse(inputs: dict[str, Path], options: dict, flops: dict, work: Path) -> dict:
    """sentence-transformers' own trainer and MultipleNegativesRankingLoss on (s, s) with the simcse-unsup plan's
    model, data and arguments (none of the package's trainer or losses)."""
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    settings = {"precision": options["precision"], "dataloader_num_workers": options["workers"], "compile": False}
    steps, warmup, device = options["steps"], options["warmup"], options["device"]
    plan = speed_plan("simcse", inputs, settings, warmup + steps, options["quick"])
    (stage,) = plan.stages
    record = StepRecord(device, warmup)
    trainer = recording(SentenceTransformerTrainer, record)(
        model=plan.model,
        args=copy.deepcopy(stage.args),
        train_dataset=stage.train_dataset,
        loss=MultipleNegativesRankingLoss(plan.model),
    )
    common.QuietTraining(record, work / "plain-simcse", stage.args.max_steps)(trainer)
    loss, times = trainer.train().training_loss, record.step_times()
    (measured,) = times.values()
    return {
        "status": "passed",
        **figures(measured["seconds"], flops.get(("simcse", stage.name, "train"), 0), options["peak_tflops"]),
        "data_wait_share": sum(measured["waits"]) / sum(measured["seconds"]),
        "longest_data_wait_ms": 1000 * max(measured["waits"]),
        "peak_mib": record.peak_mib,
        "train_loss": loss,
    }


def add_rows(log: RowLog, fields: dict, result: dict) -> None:
    """Append ``result``'s rows (or ``result`` itself, a failed or skipped run) to ``log``, each with ``fields``."""
    for row in result.pop("rows", None) or [result]:
        log.add({**fields, **row, "check": row.get("check", fields["check"])})


def goals(rows: list[dict], device: torch.device) -> dict[str, dict]:
    """Issue 33's goals (on an H100, bf16) with what this run measured: the fastest mode of each step."""

    def fastest(family: str, step: str) -> float:
        times = [row["ms_per_step"] for row in rows if (row.get("family"), row.get("step")) == (family, step)]
        return min(times, default=float("nan"))

    results = {
        f"{family} {step} step <= {limit:g} ms": {"measured": fastest(family, step), "limit": limit}
        for (family, step), limit in STEP_GOALS_MS.items()
    }
    shares = [
        row["data_wait_share"] for row in rows if row.get("family") == "pixel-linguist" and "data_wait_share" in row
    ]
    results[f"pixel-linguist data-wait share < {PIXEL_DATA_WAIT_GOAL:.0%}"] = {
        "measured": min(shares, default=float("nan")),
        "limit": PIXEL_DATA_WAIT_GOAL,
    }
    for result in results.values():
        result["met"] = device.type == "cuda" and result["measured"] <= result["limit"]
    return results


def main(args: argparse.Namespace) -> int:
    """Measure every method (see the module docstring); 1 if any row failed, else 0."""
    common.quiet()
    common.set_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA GPU is visible; run with --device cpu --quick for the CPU check.")
    device = torch.device(args.device)
    precision = args.precision
    if precision == "bf16" and device.type == "cpu" and not cpu_has_native_bf16():
        precision = "fp32"  # emulated bf16 is far slower than fp32 on such a CPU (docs/benchmarks.md, item 4)
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    peak_source = "--peak-tflops"
    peak_tflops = args.peak_tflops
    if peak_tflops is None:
        size = PEAK_MATMUL[device.type][0]
        peak_source = f"measured: {size} x {size} matmul in {precision}"
        peak_tflops = matmul_tflops(device, dtype or torch.float32)
    options = {
        "precision": precision,
        "dtype": dtype,
        "workers": args.workers if args.workers == "auto" else int(args.workers),
        "steps": args.steps or (2 if args.quick else 10),
        "warmup": args.warmup if args.warmup is not None else (1 if args.quick else 3),
        "device": device,
        "quick": args.quick,
        "peak_tflops": peak_tflops,
        "compile_backend": args.compile_backend or ("aot_eager" if args.quick else "inductor"),
    }
    families = args.families.split(",") if args.families else list(FAMILIES)
    modes = (
        args.modes.split(",")
        if args.modes
        else [mode for mode in MODES if device.type == "cuda" or MODES[mode] is None]
    )
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ValueError(f"--modes {args.modes!r}: unknown mode(s) {unknown}; the modes are {list(MODES)}.")
    default_rows = common.REPO_DIR / "runs" / f"gpu_speed-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.jsonl"
    log = RowLog((args.rows or default_rows).resolve(), names=("check", "family", "stage", "step", "mode"))
    print(f"rows: {log.path}", flush=True)
    log.add({"check": "peak", "status": "passed", "tflops": peak_tflops, "source": peak_source})
    flops: dict[tuple[str, str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-speed-") as folder:
        work = Path(folder)
        os.chdir(work)  # the trainers' relative output folders
        inputs = speed_inputs(work / "inputs", args.quick)
        for mode in modes:
            for family in families:
                fields = {"check": "step", "family": family, "mode": mode}
                measure = functools.partial(measure_family, family, mode, inputs, options, flops, work)
                add_rows(log, fields, isolated(fields, measure))
            if mode == "eager":
                fields = {"check": "plain_simcse", "mode": "eager"}
                measure = functools.partial(measure_plain_simcse, inputs, options, flops, work)
                add_rows(log, fields, isolated(fields, measure))
    steps = [row for row in log.rows if row["check"] == "step"]
    plain = [row for row in log.rows if row["check"] == "plain_simcse" and row["status"] == "passed"]
    plain_ms = plain[0]["ms_per_step"] if plain else float("nan")
    eager_losses = {
        (row["family"], row["stage"]): row["train_loss"]
        for row in steps
        if row["mode"] == "eager" and "train_loss" in row
    }
    for row in steps:
        if "ms_per_step" in row:
            row["x_plain_simcse"] = row["ms_per_step"] / plain_ms
        if row["mode"] != "eager" and (row["family"], row.get("stage")) in eager_losses:
            eager = eager_losses[row["family"], row["stage"]]
            row["loss_rel_diff_eager"] = abs(row["train_loss"] - eager) / abs(eager)
    columns = {
        "check": "check",
        "family": "family",
        "stage": "stage",
        "step": "step",
        "mode": "mode",
        "status": "status",
        "ms/step": "ms_per_step",
        "x bare": "x_bare",
        "x plain ST": "x_plain_simcse",
        "TFLOP/s": "tflops",
        "share of peak": "share_of_peak",
        "data wait": "data_wait_share",
        "peak MiB": "peak_mib",
    }
    table = [
        [row.get(key, "-") for key in columns.values()]
        for row in log.rows
        if row["check"] in ("step", "bare", "plain_simcse")
    ]
    common.print_table(list(columns), table)
    failed = log.failed()
    for row in failed:
        print(f"FAILED {log.name(row)}: {row['error']}")
    results = goals(steps, device)
    simcse = [
        row["ms_per_step"]
        for row in steps
        if row.get("family") == "simcse" and row.get("mode") == "eager" and "ms_per_step" in row
    ]
    common.emit(
        {
            "benchmark": "gpu_speed",
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
            "quick": args.quick,
            "precision": precision,
            "steps": options["steps"],
            "warmup": options["warmup"],
            "workers": options["workers"],
            "modes": modes,
            "families": families,
            "compile_backend": options["compile_backend"],
            "peak_tflops": peak_tflops,
            "peak_source": peak_source,
            "rows_file": str(log.path),
            "ratio": (simcse[0] if simcse else float("nan")) / plain_ms,
            "goal": "issue 33 on an H100 in bf16: " + "; ".join(results),
            "goals": results,
            "met": all(result["met"] for result in results.values()),
            "failed": [log.name(row) for row in failed],
            "rows": steps,
            "bare": [row for row in log.rows if row["check"] == "bare"],
            "plain_simcse": plain[0] if plain else None,
        }
    )
    return 1 if failed else 0


if __name__ == "__main__":
    arguments = parse_arguments()
    common.apply_run_arguments(arguments)  # before CUDA initialises: with --device cpu the trainers see no GPU
    sys.exit(main(arguments))
