"""One command that checks a GPU (issue 24): every method family trains a few steps in fp32, bf16 and fp16.

For each family (SimCSE, VisualCSE, AudioCSE, MCSE, MACD, multitask, Pixel Linguist) and precision the script loads
the recipe with its ``tiny`` block (small random encoders built offline), sets ``precision``, DataLoader workers
(``dataloader_num_workers``, persistent) and the steps, builds the plan with the method's builder on small data copied
from the shared folder, and trains every stage of the plan through its own trainer, as ``train_recipe`` does (without
the dev evaluation, saving and export). It reports:

- the first loss against fp32's first loss (same seed, same data, same weights: only the precision differs), within
  :data:`LOSS_TOLERANCE` (relative);
- whether every logged loss and every gradient the optimizer applied was finite (fp16: steps the loss scaler skipped
  after an overflow are counted apart and allowed, as long as not every step overflowed);
- steps/s, and its ratio to a plain sentence-transformers SimCSE step (``SentenceTransformerTrainer`` +
  ``MultipleNegativesRankingLoss`` on (s, s)) on the SimCSE recipe's tiny model with the same arguments;
- CUDA only: the peak GPU memory (``torch.cuda.max_memory_allocated``) of one VisualCSE step at the paper's batch
  (48 images x 2 views at 224 px + 64 sentences x 2 views x 32 tokens, BERT-base shape 768 x 12, random weights, one
  AdamW step) per precision;
- CUDA with more than one GPU only: a 2-step DDP run (2 processes, nccl, ``torch.distributed.run``) of SimCSE and
  VisualCSE; else skipped with the reason.

``--device cpu --quick`` runs the same checks on the CPU with fp32 and bf16 autocast only (fp16 needs a GPU: skipped
with the reason), 3 steps, smaller batches, and skips the GPU memory and DDP checks; the test suite runs it
(tests/test_benchmarks.py), so the script cannot rot. Run: ``python benchmarks/gpu_check.py [--device cuda|cpu]
[--quick] [--steps 10] [--workers 2] [--precisions fp32,bf16,fp16] [--families simcse,...] [--shared DIR]``. Prints a
table, then one JSON line (fields: docs/benchmarks.md, "GPU check").
"""

from __future__ import annotations

import argparse
import os
import sys


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: hide the GPUs (CI check)")
    parser.add_argument("--quick", action="store_true", help="3 steps, smaller batches (for the CPU check in the tests)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps per family, precision and stage (default 10; --quick 3)")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (persistent)")
    parser.add_argument("--precisions", default="fp32,bf16,fp16", help="fp32 first: the others are compared with it")
    parser.add_argument("--families", default=None, help="comma-separated subset of the families (default: all)")
    parser.add_argument("--shared", default=None, help="the shared folder (default: $SBERT_NONLING_SHARED or ../shared)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the main process")
    parser.add_argument("--ddp-worker", default=None, help=argparse.SUPPRESS)  # internal: this process is a DDP rank
    return parser.parse_args(argv)


ARGS = parse_arguments() if __name__ == "__main__" else None
if ARGS is not None:
    if ARGS.shared:
        os.environ["SBERT_NONLING_SHARED"] = ARGS.shared  # read by common at import
    if ARGS.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch initialises CUDA: the trainers then see no GPU

import copy  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import common  # noqa: E402
import torch  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

from sbert_nonling.app import load_recipe  # noqa: E402
from sbert_nonling.data import DataSources  # noqa: E402
from sbert_nonling.methods import build_grounding, build_multitask, build_pixel_linguist, build_simcse, build_unpaired_modality  # noqa: E402
from sbert_nonling.methods.plan import TrainingStage  # noqa: E402

#: Largest relative difference |loss - fp32 loss| / |fp32 loss| of the first step. bf16 keeps 8 significant bits
#: (unit round-off 2^-8 = 3.9e-3 per rounding), fp16 11 (2^-11 = 4.9e-4); through a few layers and a softmax over the
#: batch these add up to ~1e-2 (bf16) / ~1e-3 (fp16) in the loss, so 5x that margin: a precision bug (a loss computed
#: in half precision, an overflow, a wrong scale) moves the first loss by far more.
LOSS_TOLERANCE = {"fp32": 0.0, "bf16": 5e-2, "fp16": 1e-2}
FAMILIES = ("simcse", "visualcse", "audiocse", "mcse", "macd", "multitask", "pixel-linguist")
#: The paper's VisualCSE batch: 48 images x 2 views (224 px) in the image step, 64 sentences x 2 views in the text step.
PAPER_IMAGES, PAPER_SENTENCES, PAPER_TOKENS = 48, 64, 32


def prepare_inputs(root: Path, quick: bool) -> dict[str, Path]:
    """Small copies of the shared data: wiki sentences, NLI triplets, STS / SICK task files, 12 Flickr8k photos."""
    data = common.DATA_DIR
    if not data.is_dir():
        raise ValueError(f"The shared data folder {str(data)!r} is missing; pass --shared or set SBERT_NONLING_SHARED.")

    def head(source: Path, target: Path, lines: int | slice) -> Path:
        rows = source.read_text(encoding="utf-8").splitlines()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(rows[lines] if isinstance(lines, slice) else rows[:lines]) + "\n", encoding="utf-8")
        return target

    wiki = head(data / "corpus" / "wiki1m_for_simcse.first11913.txt", root / "wiki.txt", 128 if quick else 512)
    nli = head(data / "corpus" / "snli_devtest_triplets.csv", root / "nli.csv", 97 if quick else 257)
    tasks = root / "tasks"
    for folder, name, lines in (
        ("STSBenchmark", "sts-dev.csv", 60),
        ("SICK", "SICK_trial.txt", 60),
        ("STSBenchmark", "sts-train.csv", slice(None, None, 40)),
        ("SICK", "SICK_train.txt", slice(None, None, 30)),
    ):
        head(data / "sts" / folder / name, tasks / folder / name, lines)
    flickr = root / "flickr"
    (flickr / "images").mkdir(parents=True)
    names = sorted(path.name for path in (data / "images" / "flickr8k").iterdir())[:12]
    for name in names:
        shutil.copy(data / "images" / "flickr8k" / name, flickr / "images" / name)
    tokens = (data / "corpus" / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    (flickr / "captions.txt").write_text("\n".join(line for line in tokens if line.split("#")[0] in names) + "\n", encoding="utf-8")
    return {"wiki": wiki, "nli": nli, "tasks": tasks, "flickr": flickr}


def family_plan(family: str, inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool):
    """The method plan of ``family`` at its recipe's tiny size with ``precision``, ``workers`` and ``steps``."""
    batch = 8 if quick else 32
    settings = {"precision": precision, "dataloader_num_workers": workers}
    data = common.DATA_DIR
    if family == "simcse":
        config = load_recipe("simcse-unsup", tiny=True, overrides={**settings, "batch_size": batch, "max_steps": steps})
        return build_simcse(config, DataSources(text_file=inputs["wiki"]))
    if family in ("visualcse", "audiocse"):
        overrides = {**settings, "batch_size": batch, "max_steps": steps, "modality_batch_size": batch // 2}
        if family == "visualcse":
            config = load_recipe("visualcse", tiny=True, overrides={**overrides, "images_per_class": 2 if quick else 8})
            return build_unpaired_modality(config, DataSources(text_file=inputs["wiki"], image_dir=data / "images" / "cifar10" / "train"))
        config = load_recipe("audiocse", tiny=True, overrides={**overrides, "clips": 16 if quick else 64})
        return build_unpaired_modality(
            config, DataSources(text_file=inputs["wiki"], audio_dir=data / "audio" / "fsdd", audio_label_regex=r"^\d+_([a-z]+)_")
        )
    if family in ("mcse", "macd"):
        config = load_recipe(family, tiny=True, overrides={**settings, "batch_size": 6, "max_steps": steps})
        flickr = inputs["flickr"]
        return build_grounding(config, DataSources(captions_file=flickr / "captions.txt", image_dir=flickr / "images", text_file=inputs["wiki"]))
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


def train_stage(trainer, output_dir: Path) -> tuple[common.StepClock, FiniteGradients]:
    """Train ``trainer`` with a loss logged every step, no checkpoints; the step clock and the gradient check."""
    trainer.args.output_dir = str(output_dir)
    trainer.args.set_logging(strategy="steps", steps=1, report_to="none", nan_inf_filter=False)
    trainer.args.set_save(strategy="no")
    common.silence(trainer)
    clock, gradients = common.StepClock(), FiniteGradients()
    trainer.add_callback(clock)
    trainer.add_callback(gradients)
    trainer.train()
    return clock, gradients


def run_family(family: str, inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool, work: Path) -> dict:
    """Train every stage of ``family``'s plan; its first losses, finiteness and steps/s."""
    plan = family_plan(family, inputs, precision, workers, steps, quick)
    losses, seconds = [], []
    finite_steps = nonfinite_steps = 0
    for index, stage in enumerate(plan.stages):
        if not isinstance(stage, TrainingStage):
            continue  # a weight average between stages: no training step
        for hook in stage.before:
            hook(plan.model)
        clock, gradients = train_stage(stage.trainer(plan.model, plan.evaluator), work / f"{family}-{precision}-{index}")
        for hook in stage.after:
            hook(plan.model)
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


def plain_simcse_speed(inputs: dict[str, Path], precision: str, workers: int, steps: int, quick: bool, work: Path) -> float:
    """Steps/s of sentence-transformers' own trainer and MultipleNegativesRankingLoss on (s, s): the SimCSE recipe's
    model, data and arguments, none of the package's trainer or losses."""
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    plan = family_plan("simcse", inputs, precision, workers, steps, quick)
    (stage,) = plan.stages
    trainer = SentenceTransformerTrainer(
        model=plan.model, args=copy.deepcopy(stage.args), train_dataset=stage.train_dataset, loss=MultipleNegativesRankingLoss(plan.model)
    )
    clock, _ = train_stage(trainer, work / f"plain-{precision}")
    return 1.0 / common.median(clock.step_seconds())


def check_rows(rows: list[dict]) -> None:
    """Add ``loss_rel_diff`` / ``loss_within_tolerance`` (first loss against fp32's) and ``finite`` to each row."""
    reference = {row["family"]: row["first_losses"][0] for row in rows if row["precision"] == "fp32"}
    for row in rows:
        first, base = row["first_losses"][0], reference.get(row["family"])
        row["loss_rel_diff"] = abs(first - base) / abs(base) if base else float("nan")
        row["tolerance"] = LOSS_TOLERANCE[row["precision"]]
        row["loss_within_tolerance"] = bool(row["loss_rel_diff"] <= row["tolerance"])
        allowed_overflows = row["precision"] == "fp16" and row["finite_grad_steps"] > 0
        row["grads_finite"] = row["overflow_steps"] == 0 or allowed_overflows
        row["finite"] = row["losses_finite"] and row["grads_finite"]
        row["ok"] = row["finite"] and row["loss_within_tolerance"]


def paper_batch_memory(precision: str) -> dict:
    """Peak GPU memory of one VisualCSE step (image step + text step, one AdamW step) at the paper's batch, BERT-base
    shape, under ``precision`` autocast (fp16: with a GradScaler)."""
    from PIL import Image

    from sbert_nonling import ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss
    from sbert_nonling.models import build_sentence_model

    torch.manual_seed(0)
    front_end = ImagePatchEmbed(img_size=224, patch_size=16, embedding_dimension=common.ENCODER_SIZES["base"][0])
    model = build_sentence_model(common.encoder_dir("base"), pooling="cls", max_seq_length=PAPER_TOKENS, front_ends={"image": front_end})
    model.to("cuda").train()
    image_loss, text_loss = UnpairedModalityContrastiveLoss(model, mode="supcon"), SimCSELoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    generator = torch.Generator().manual_seed(0)
    images = [Image.fromarray(torch.randint(0, 256, (224, 224, 3), dtype=torch.uint8, generator=generator).numpy()) for _ in range(PAPER_IMAGES)]
    image_features = {key: value.to("cuda") for key, value in model.preprocess(images, modality="image").items()}
    text_features = {key: value.to("cuda") for key, value in model.preprocess(common.wiki_sentences(PAPER_SENTENCES)).items()}
    labels = (torch.arange(PAPER_IMAGES) % 10).to("cuda")
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    for loss, features, step_labels in ((image_loss, image_features, labels), (text_loss, text_features, None)):
        with torch.autocast("cuda", dtype=dtype, enabled=precision != "fp32"):
            value = loss([dict(features), dict(features)], step_labels)
        scaler.scale(value).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del model, optimizer
    torch.cuda.empty_cache()
    return {"precision": precision, "peak_mib": peak / 2**20, "model_mib": start / 2**20, "images": PAPER_IMAGES, "sentences": PAPER_SENTENCES}


def ddp_check(work: Path, workers: int) -> dict:
    """2 processes under ``torch.distributed.run`` (nccl), SimCSE and VisualCSE 2 steps each in bf16 (fp16 on an older GPU)."""
    output = work / "ddp.json"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(Path(__file__).resolve()),
        "--ddp-worker",
        str(output),
        "--workers",
        str(workers),
        "--steps",
        "2",
        "--quick",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if completed.returncode != 0 or not output.exists():
        return {"status": "failed", "returncode": completed.returncode, "stderr_tail": completed.stderr[-2000:]}
    rows = json.loads(output.read_text(encoding="utf-8"))
    ok = all(row["finite"] for row in rows)
    return {"status": "passed" if ok else "failed", "processes": 2, "backend": "nccl", "rows": rows}


def ddp_worker(output: str, workers: int, steps: int) -> None:
    """One rank of :func:`ddp_check`: the trainers see LOCAL_RANK / WORLD_SIZE and wrap the model in DDP (nccl)."""
    from sbert_nonling.training.arguments import resolved_precision

    precision = resolved_precision("auto")
    with tempfile.TemporaryDirectory(prefix="gpu-check-ddp-") as folder:
        inputs = prepare_inputs(Path(folder) / "inputs", quick=True)
        rows = [run_family(family, inputs, precision, workers, steps, True, Path(folder)) for family in ("simcse", "visualcse")]
    for row in rows:
        row["finite"] = row["losses_finite"] and (row["overflow_steps"] == 0 or row["finite_grad_steps"] > 0)
        row["world_size"] = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    if int(os.environ.get("RANK", "0")) == 0:
        Path(output).write_text(json.dumps(rows, default=float), encoding="utf-8")


def main(args: argparse.Namespace) -> None:
    common.quiet()
    common.set_threads(args.threads)
    steps = args.steps or (3 if args.quick else 10)
    if args.ddp_worker:
        ddp_worker(args.ddp_worker, args.workers, steps)
        return
    on_gpu = torch.cuda.is_available()
    if args.device == "cuda" and not on_gpu:
        raise ValueError("--device cuda: no CUDA GPU is visible; run with --device cpu --quick for the CPU check.")
    families = args.families.split(",") if args.families else list(FAMILIES)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"Unknown families {unknown}; valid families are: {list(FAMILIES)}")
    precisions, skipped = [], {}
    for precision in args.precisions.split(","):
        if precision == "fp16" and not on_gpu:
            skipped["fp16"] = "fp16 autocast with loss scaling needs a CUDA GPU (resolved_precision refuses it on a CPU)"
        elif precision == "bf16" and on_gpu and not torch.cuda.is_bf16_supported(including_emulation=False):
            skipped["bf16"] = f"{torch.cuda.get_device_name()} has no native bf16"
        else:
            precisions.append(precision)
    if precisions[:1] != ["fp32"]:
        raise ValueError(f"--precisions={args.precisions!r} must start with fp32, the reference of the loss check.")
    rows, plain = [], {}
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        work = Path(folder)
        inputs = prepare_inputs(work / "inputs", args.quick)
        for precision in precisions:
            plain[precision] = plain_simcse_speed(inputs, precision, args.workers, steps, args.quick, work)
            for family in families:
                rows.append(run_family(family, inputs, precision, args.workers, steps, args.quick, work))
                rows[-1]["x_plain_simcse"] = rows[-1]["steps_per_second"] / plain[precision]
                print(f"{family} {precision} done", flush=True)
        check_rows(rows)
        if on_gpu:
            memory = {"status": "measured", "rows": [paper_batch_memory(precision) for precision in precisions]}
        else:
            memory = {"status": "skipped", "reason": "torch.cuda.max_memory_allocated needs a GPU; CPU peak memory: benchmarks/memory.py"}
        if on_gpu and torch.cuda.device_count() > 1:
            ddp = ddp_check(work, args.workers)
        else:
            ddp = {
                "status": "skipped",
                "reason": f"needs more than one GPU ({torch.cuda.device_count() if on_gpu else 0} visible); "
                "CPU DDP (gloo) is tested in tests/distributed",
            }
    common.print_table(
        ["family", "precision", "first loss", "rel. diff", "tolerance", "finite", "overflows", "steps/s", "x plain SimCSE", "ok"],
        [
            [
                row["family"],
                row["precision"],
                row["first_losses"][0],
                row["loss_rel_diff"],
                row["tolerance"],
                row["finite"],
                row["overflow_steps"],
                row["steps_per_second"],
                row["x_plain_simcse"],
                row["ok"],
            ]
            for row in rows
        ],
    )
    for precision, reason in skipped.items():
        print(f"{precision}: skipped ({reason})")
    for row in memory.get("rows", []):
        print(f"VisualCSE step at the paper batch, BERT-base shape, {row['precision']}: peak {row['peak_mib']:.0f} MiB")
    print(f"DDP: {ddp['status']}" + (f" ({ddp['reason']})" if "reason" in ddp else ""))
    met = all(row["ok"] for row in rows) and memory["status"] != "failed" and ddp["status"] != "failed"
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
            "ratio": min(row["x_plain_simcse"] for row in rows),
            "goal": "every family and precision: finite losses and gradients, first loss within tolerance of fp32",
            "met": met,
            "plain_simcse_steps_per_second": plain,
            "rows": rows,
            "memory": memory,
            "ddp": ddp,
        }
    )


if __name__ == "__main__":
    main(ARGS)
