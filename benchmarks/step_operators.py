"""The ATen operators of one optimizer step of each method's trainer vs a bare PyTorch loop of the same step
(issue 33).

Each method's plan is built from its recipe's ``tiny`` block (small random encoders built offline, ``compile`` off:
eager steps) on small data copied from the shared folder, as ``benchmarks/gpu_check.py`` builds it, and its stages
train a few steps each through ``TrainingStage.run``: their hooks and their own trainer (``NonLinguisticTrainer`` /
``UnpairedModalityTrainer``, every callback of a real run), with no logging, evaluation or saving before the last
step. A ``TorchDispatchMode`` counts the operators dispatched between the step's ``on_step_begin`` and
``on_step_end`` (forward, backward, clipping, the optimizer step, the schedule) of an ordinary step of each training
dataset, one whose optimizer had stepped before (the first step creates AdamW's state).

The bare loop takes the very batches of that step and runs the same step by hand on the same model: the loss module on
the batch's features (divided by the accumulation steps when there are several micro-batches), ``backward``,
``clip_grad_norm_`` of the model's parameters at the run's ``max_grad_norm``, one ``torch.optim.AdamW`` of the same
implementation (fused) over the parameter groups the dataset's optimizer holds, the scheduler step and ``zero_grad``
(its second step is counted, after the state is created). The table lists, per method and dataset, both counts, their
ratio (goal: at most 1.1) and the operators only the trainer dispatched; ``aten._local_scalar_dense`` (a host-device
synchronisation) is counted apart. Pixel Linguist's visual stage is included when its rendering extra is installed.

Run: ``python benchmarks/step_operators.py [--families simcse,...] [--steps 6] [--shared DIR] [--quick]``. Prints a
table, then one JSON line (fields: docs/benchmarks.md, "Operators per step"). ``--quick``: 5 steps per stage (the
fewest that count an ordinary step of each of VisualCSE's two optimizers) on one thread, a run of seconds per method
that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
from pathlib import Path

import common
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import TrainerCallback

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.methods import (
    build_grounding,
    build_multitask,
    build_pixel_linguist,
    build_simcse,
    build_unpaired_modality,
)
from sbert_nonling.methods.plan import ModelUpdate

FAMILIES = ("simcse", "visualcse", "audiocse", "mcse", "macd", "multitask", "pixel-linguist")
GOAL = 1.1
SYNC = "aten._local_scalar_dense.default"
#: The recipe setting of the eager steps counted here (``compile``'s ``auto`` would compile them on a GPU).
EAGER = {"compile": False}
#: ``--quick``: the fewest steps that count an ordinary step of each dataset, one thread.
QUICK = {"steps": 5, "threads": 1}


class OperatorCount(TorchDispatchMode):
    """Counts the ATen operators dispatched while it is active, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.operators: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.operators[str(func)] += 1
        return func(*args, **(kwargs or {}))


class StepOperators(TrainerCallback):
    """The operators of every optimizer step and the batches it trained on (``batches``: filled by the trainer)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, object]] = []
        self.batches: list[dict[str, object]] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.batches = []
        self.count = OperatorCount()
        self.count.__enter__()

    def on_step_end(self, args, state, control, **kwargs):
        self.count.__exit__(None, None, None)
        ordinary = not (
            control.should_log
            or control.should_evaluate
            or control.should_save
            or state.global_step >= state.max_steps
        )
        self.steps.append(
            {
                "step": state.global_step,
                "ordinary": ordinary,
                "operators": self.count.operators,
                "batches": self.batches,
            }
        )


def recording(trainer_class: type, callback: StepOperators) -> type:
    """``trainer_class`` whose ``training_step`` hands a copy of each training batch to ``callback``."""

    class Recording(trainer_class):
        def training_step(self, model, inputs, num_items_in_batch=None):
            callback.batches.append(dict(inputs))  # compute_loss pops "dataset_name": keep it
            return super().training_step(model, inputs, num_items_in_batch)

    return Recording


def family_plan(family: str, inputs: dict[str, Path], steps: int):
    """The tiny-recipe plan of ``family`` with batches of 8 (images / audio 4, captions 6), ``steps`` steps per
    stage."""
    data = common.DATA_DIR
    if family == "simcse":
        return build_simcse(
            load_recipe("simcse-unsup", tiny=True, overrides={**EAGER, "batch_size": 8, "max_steps": steps}),
            DataSources(text_file=inputs["wiki"]),
        )
    if family in ("visualcse", "audiocse"):
        overrides = {**EAGER, "batch_size": 8, "max_steps": steps, "modality_batch_size": 4}
        if family == "visualcse":
            config = load_recipe("visualcse", tiny=True, overrides={**overrides, "images_per_class": 2})
            return build_unpaired_modality(
                config, DataSources(text_file=inputs["wiki"], image_dir=data / "images" / "cifar10" / "train")
            )
        config = load_recipe("audiocse", tiny=True, overrides={**overrides, "clips": 16})
        return build_unpaired_modality(
            config,
            DataSources(
                text_file=inputs["wiki"], audio_dir=data / "audio" / "fsdd", audio_label_regex=r"^\d+_([a-z]+)_"
            ),
        )
    if family in ("mcse", "macd"):
        config = load_recipe(family, tiny=True, overrides={**EAGER, "batch_size": 6, "max_steps": steps})
        return build_grounding(
            config,
            DataSources(
                captions_file=inputs["captions"], image_dir=inputs["images"], text_file=inputs["few_sentences"]
            ),
        )
    if family == "multitask":
        overrides = {
            **EAGER,
            "train_limit": 48,
            "contrastive.batch_size": 8,
            "multitask.batch_size": 8,
            "contrastive.max_steps": steps,
            "multitask.max_steps": steps,
        }
        return build_multitask(
            load_recipe("multitask", tiny=True, overrides=overrides),
            DataSources(nli_file=inputs["nli"], sts_dir=inputs["tasks"]),
        )
    overrides = {
        **EAGER,
        "perturbation_sets": [["swap"]],
        "visual.batch_size": 8,
        "visual.max_steps": steps,
        "topical.max_steps": 0,
        "reasoning.max_steps": 0,
        "parallel.max_steps": 0,
    }
    return build_pixel_linguist(
        load_recipe("pixel-linguist", tiny=True, overrides=overrides),
        DataSources(text_file=inputs["wiki"], nli_file=inputs["nli"]),
    )


def bare_operators(trainer, batches: list[dict[str, object]]) -> collections.Counter[str]:
    """The operators of the bare loop's second step on ``batches`` (the first creates AdamW's state)."""
    optimizer, scheduler = common.bare_optimizer(trainer, batches[0].get("dataset_name"))
    common.bare_step(trainer, batches, optimizer, scheduler)
    with OperatorCount() as count:
        common.bare_step(trainer, batches, optimizer, scheduler)
    return count.operators


def measure_stage(stage, model, steps: int, work: Path) -> list[dict[str, object]]:
    """Train ``stage`` ``steps`` steps counting each step's operators; per training dataset (or the datasets of one
    accumulated step), its last ordinary step whose optimizer had stepped before, against the bare loop on the same
    batches."""
    callback = StepOperators()
    stage.trainer_class = recording(stage.trainer_class, callback)
    stage.args.eval_strategy, stage.args.load_best_model_at_end = "no", False
    start = common.QuietTraining(callback, work, steps)
    stage.run(model, before_training=start)
    trainer = start.trainer
    chosen: dict[str, dict[str, object]] = {}
    started: set[str] = set()  # the optimizers that have stepped (one per dataset under the alternating scheme)
    for step in callback.steps:
        name = "+".join(
            dict.fromkeys(str(batch.get("dataset_name") or "train") for batch in step["batches"])
        )  # the step's datasets
        optimizer = name if getattr(trainer, "modality_optimizer", None) is not None else "all"
        if step["ordinary"] and optimizer in started:
            chosen[name] = step
        started.add(optimizer)
    rows = []
    for name, step in chosen.items():
        trainer_ops, bare = step["operators"], bare_operators(trainer, step["batches"])
        extra = trainer_ops - bare
        rows.append(
            {
                "dataset": name,
                "step": step["step"],
                "trainer_ops": sum(trainer_ops.values()),
                "bare_ops": sum(bare.values()),
                "ratio": sum(trainer_ops.values()) / sum(bare.values()),
                "trainer_syncs": trainer_ops[SYNC],
                "bare_syncs": bare[SYNC],
                "extra": dict(extra.most_common()),
                "missing": dict((bare - trainer_ops).most_common()),
            }
        )
    return rows


def prepare_inputs(root: Path) -> dict[str, Path]:
    """Small copies of the shared data: 128 (and 24) wiki sentences, 100 NLI triplets, STS / SICK task files, 12
    Flickr8k photos."""
    data = common.DATA_DIR

    def head(source: Path, target: Path, pick) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(pick(source.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
        return target

    inputs = {
        "wiki": head(
            data / "corpus" / "wiki1m_for_simcse.first11913.txt", root / "wiki.txt", lambda lines: lines[:128]
        ),
        # MCSE interleaves its text and caption batches in proportion: few sentences, so caption steps come early
        "few_sentences": head(
            data / "corpus" / "wiki1m_for_simcse.first11913.txt", root / "few.txt", lambda lines: lines[:24]
        ),
        "nli": head(data / "corpus" / "snli_devtest_triplets.csv", root / "nli.csv", lambda lines: lines[:100]),
        "tasks": root / "tasks",
        "images": root / "flickr" / "images",
    }
    for folder, name, pick in (
        ("STSBenchmark", "sts-dev.csv", lambda lines: lines[:60]),
        ("SICK", "SICK_trial.txt", lambda lines: lines[:60]),
        ("STSBenchmark", "sts-train.csv", lambda lines: lines[::40]),
        ("SICK", "SICK_train.txt", lambda lines: lines[::30]),
    ):
        head(data / "sts" / folder / name, inputs["tasks"] / folder / name, pick)
    names = sorted(path.name for path in (data / "images" / "flickr8k").iterdir())[:12]
    inputs["images"].mkdir(parents=True)
    for name in names:
        (inputs["images"] / name).write_bytes((data / "images" / "flickr8k" / name).read_bytes())
    chosen = set(names)
    inputs["captions"] = head(
        data / "corpus" / "flickr8k" / "Flickr8k.token.txt",
        root / "flickr" / "captions.txt",
        lambda lines: [line for line in lines if line.split("#")[0] in chosen],
    )
    return inputs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of the families")
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per stage (the last one is not counted)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--shared", default=None, help="the shared folder (default: $SBERT_NONLING_SHARED or ../shared)"
    )
    args = common.parse_arguments(parser, QUICK, argv)
    common.use_shared_folder(args.shared)
    common.quiet()
    common.set_threads(args.threads)
    results: list[dict[str, object]] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        inputs = prepare_inputs(root / "inputs")
        for family in args.families.split(","):
            work = root / family
            work.mkdir()
            os.chdir(work)
            torch.manual_seed(0)
            try:
                plan = family_plan(family, inputs, args.steps)
            except ImportError as error:  # an optional extra (rendering, audio) is not installed
                skipped[family] = str(error)
                continue
            for index, stage in enumerate(plan.stages):  # as MethodPlan.train runs them
                if isinstance(stage, ModelUpdate):
                    stage.apply(plan.model)
                    continue
                if stage.args.max_steps == 0:
                    continue  # a stage left out
                for row in measure_stage(stage, plan.model, args.steps, work / f"stage-{index}"):
                    results.append({"method": family, "stage": stage.name, **row})
    common.print_table(
        [
            "method",
            "stage",
            "dataset",
            "trainer ops",
            "bare ops",
            "ratio",
            "syncs (trainer / bare)",
            "extra operators (trainer - bare)",
        ],
        [
            [
                row["method"],
                row["stage"],
                row["dataset"],
                row["trainer_ops"],
                row["bare_ops"],
                row["ratio"],
                f"{row['trainer_syncs']} / {row['bare_syncs']}",
                ", ".join(f"{name.removeprefix('aten.')} x{count}" for name, count in row["extra"].items()),
            ]
            for row in results
        ],
    )
    for family, reason in skipped.items():
        print(f"{family}: skipped ({reason})")
    worst = max(row["ratio"] for row in results)
    common.emit(
        {
            "benchmark": "step_operators",
            "ratio": worst,
            "goal": f"every method's step at most {GOAL}x the bare loop's operators",
            "met": worst <= GOAL,
            "steps": results,
            "skipped": skipped,
            "settings": vars(args),
        }
    )


if __name__ == "__main__":
    main()
