"""The trainers' own host time per step (issue 33): each method's trainer step vs a bare loop of the same step, on
the CPU where the host dominates.

Each method's plan is ``gpu_speed.py``'s CPU check's (the recipe's ``tiny`` block at batch 8, images and clips 4,
captions 6, on small copies of the shared data, built by the method's own builder) with every random text encoder
2 layers and 64 wide (:data:`NARROW`; Pixel Linguist's tiny PIXEL encoder is that wide already), no DataLoader
workers, one torch thread and, run as a script, the GPUs hidden (``main`` alone trains where the trainers put the
model, the bare loop with it). There a step's arithmetic is small and its cost is the host's: Python,
dispatch and the operators' fixed costs, what a launch-bound GPU step (issue 33's H200 rows) pays too. Each stage
trains through its own trainer and callbacks (``TrainingStage.run``, no logging, evaluation or saving before the last
step) and, per kind of step (VisualCSE's image and text steps, ...), the bare loop (``common.bare_step``: the same
model, loss modules and fused AdamW; forward, backward, clipping, the optimizer and the schedule, nothing else) runs
each timed step again on the same batches.

The trainer's step is the time between two step ends less its wait for the DataLoader (``get_batch_samples``: the
batch's reading, decoding and collation, which the bare loop's ready batch skips and a GPU run's workers do): forward,
backward, clipping, the optimizer, the schedule and all the trainers' own bookkeeping. Both are read from
``time.process_time`` (this process's CPU seconds; other jobs on the shared cores hardly move them), and the trainer
runs alternate with the bare loops on the very batches of their timed steps (all but each kind's first ``--warmup``
and the run's last, which also checks the weights), ``--rounds`` times. The first table gives per step kind the
median ms of both, their ratio (goal: at most 1.1), their difference (``extra ms``) and the median data wait. Then
one more run of each stage times the trainer's own work of a step that the bare loop does not do
(:data:`TRAINER_ONLY`: transformers' ``model.train()`` before each micro-batch and ``model.zero_grad()`` after the
optimizer, the callbacks' events, ``_prepare_inputs``, accelerate's ``is_lomo_available``), beside the stage's mean
trainer ms less the bare loop's.

Beside the families, the same measurement of sentence-transformers' own trainer (:func:`measure_reference`:
``SentenceTransformerTrainer`` and ``MultipleNegativesRankingLoss`` on the simcse family's plan, none of the
package's trainer, callbacks or losses): its extra ms is what the libraries' loop alone adds to a step, and a
method step's ``over reference ms`` (its extra ms less the reference's) is the package's own share, within the noise
of both. It is not a method, so the goal leaves it out.

Run: ``python benchmarks/host_overhead.py [--families simcse,...] [--steps 10] [--warmup 2] [--rounds 4]
[--precision fp32] [--threads 1] [--shared DIR] [--quick]``. Prints a table, then one JSON line (fields:
docs/benchmarks.md, "Host overhead per family (CPU)"). ``--quick``: 1 untimed and 2 timed steps per kind, 2 rounds
(the test suite runs it).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import dataclasses
import functools
import os
import statistics
import tempfile
import time
import unittest.mock
from collections.abc import Callable, Iterator
from pathlib import Path

import accelerate.optimizer
import common
import torch
from gpu_check import missing_extra
from gpu_speed import FAMILIES, STEP_KINDS, StepRecord, bare_seconds, recording, speed_inputs, speed_plan
from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import nn
from transformers import Trainer, TrainerCallback, TrainerState
from transformers.trainer_callback import CallbackHandler

from sbert_nonling.methods.plan import ModelUpdate, TrainingStage
from sbert_nonling.models.tiny_encoder import TINY_BERT
from sbert_nonling.training.arguments import cpu_has_native_bf16

GOAL = 1.1
#: The family name of :func:`measure_reference`'s rows: sentence-transformers' own trainer, not a method.
REFERENCE = "sentence-transformers"
#: The random text encoders' shape here (``build_tiny_encoder``'s :data:`~sbert_nonling.models.tiny_encoder.TINY_BERT`
#: while the plans are built): 2 layers, 64 wide.
NARROW = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 256}
#: Family settings that go with :data:`NARROW`: DALR compares the student's embeddings with the CLIP features directly,
#: so its tiny CLIP is as wide.
NARROW_SETTINGS = {"dalr": {"clip_dimension": NARROW["hidden_size"]}}
#: ``--quick``: one untimed and two timed steps of each kind, two rounds.
QUICK = {"steps": 2, "warmup": 1, "rounds": 2}
#: The trainer's own work of a step that the bare loop does not do: region -> (owner, function), timed in its outermost
#: calls by :class:`RegionClock`.
TRAINER_ONLY = {
    # transformers' training_step, before each micro-batch
    "model.train": (nn.Module, "train"),
    # transformers' loop after the optimizer step (sentence-transformers' callback then clears the optimizer's)
    "model.zero_grad": (nn.Module, "zero_grad"),
    # every callback at every event of the step, what they do included (the optimizer's zero_grad of
    # sentence-transformers' callback, the trainers' own callbacks, this benchmark's step clock)
    "callback events": (CallbackHandler, "call_event"),
    # transformers' training_step: the batch (already there) to the device
    "_prepare_inputs": (Trainer, "_prepare_inputs"),
    # accelerate's optimizer step looks for the lomo_optim package twice (importlib.util.find_spec), every step
    "is_lomo_available": (accelerate.optimizer, "is_lomo_available"),
}


class EveryStep(StepRecord):
    """:class:`gpu_speed.StepRecord` that also keeps the batches of every step, in order (``step_batches``)."""

    def __init__(self, device: torch.device, warmup: int, kinds: int) -> None:
        super().__init__(device, warmup, kinds=kinds, clock=time.process_time)
        self.step_batches: list[list[dict]] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.step_batches.append(self.current)
        super().on_step_end(args, state, control, **kwargs)


class RegionClock(TrainerCallback):
    """The process seconds of the functions of :data:`TRAINER_ONLY` (their outermost calls) inside :meth:`patched`,
    over the steps of a run from ``start`` to the one before its last (the first ones warm up, the last one checks
    the weights).

    Args:
        start: the first timed step.
    """

    def __init__(self, start: int) -> None:
        self.start = start
        self.seconds: collections.Counter[str] = collections.Counter()
        self.steps = 0
        self.state: TrainerState | None = None
        self.inside: set[str] = set()

    def on_train_begin(self, args, state, control, **kwargs):
        self.state = state
        self.steps = state.max_steps - 1 - self.start

    def timing(self) -> bool:
        return self.state is not None and self.start <= self.state.global_step < self.state.max_steps - 1

    def timed(self, region: str, function: Callable) -> Callable:
        """``function``, its outermost calls timed as ``region`` while :meth:`timing`."""

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if region in self.inside or not self.timing():
                return function(*args, **kwargs)
            self.inside.add(region)
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[region] += time.process_time() - start
                self.inside.discard(region)

        return wrapper

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        """The functions of :data:`TRAINER_ONLY` timed inside the block."""
        with contextlib.ExitStack() as stack:
            for region, (owner, name) in TRAINER_ONLY.items():
                stack.enter_context(unittest.mock.patch.object(owner, name, self.timed(region, getattr(owner, name))))
            yield

    def per_step_ms(self) -> dict[str, float]:
        return {region: 1000 * self.seconds[region] / self.steps for region in TRAINER_ONLY}


def train_rounds(stage: TrainingStage, model, options: dict, kinds: int, work: Path) -> tuple[list[dict], dict]:
    """``options["rounds"]`` runs of ``stage``, each followed by the bare loop on the batches of its timed steps, then
    one run with :class:`RegionClock`. A row per kind of step with the host ms of both (medians over every round's
    timed steps), and the stage's :data:`TRAINER_ONLY` ms per step beside the trainer's mean ms less the bare
    loop's."""
    trainer_class = stage.trainer_class
    samples: dict[str, dict[str, list[float]]] = {}
    try:
        for round_index in range(options["rounds"]):
            record = EveryStep(stage.args.device, options["warmup"], kinds)
            stage.trainer_class = recording(trainer_class, record)
            start = common.QuietTraining(record, work / f"round-{round_index}", stage.args.max_steps)
            stage.run(model, before_training=start)
            last = len(record.kinds) - 1  # the run's last step also checks the weights: not an ordinary step
            for kind, measured in record.step_times().items():
                kind_samples = samples.setdefault(kind, {"trainer": [], "bare": [], "wait": []})
                steps = []
                for seconds, wait, index in zip(measured["seconds"], measured["waits"], measured["steps"]):
                    if index != last:
                        kind_samples["trainer"].append(seconds - wait)
                        kind_samples["wait"].append(wait)
                        steps.append(record.step_batches[index])
                kind_samples["bare"] += bare_seconds(
                    start.trainer, steps, start.trainer.args.device, options["dtype"], clock=time.process_time
                )
    finally:
        stage.trainer_class = trainer_class
    clock = RegionClock(options["warmup"] * kinds)
    with clock.patched():
        stage.run(model, before_training=common.QuietTraining(clock, work / "regions", stage.args.max_steps))
    means = {
        name: statistics.mean(value for kind_samples in samples.values() for value in kind_samples[name])
        for name in ("trainer", "bare")
    }
    breakdown = {
        "stage": stage.name,
        "trainer_minus_bare_ms": 1000 * (means["trainer"] - means["bare"]),
        "regions_ms": clock.per_step_ms(),
    }
    rows = []
    for kind, kind_samples in samples.items():
        trainer_ms, bare_ms = (1000 * common.median(kind_samples[name]) for name in ("trainer", "bare"))
        rows.append(
            {
                "stage": stage.name,
                "step": kind,
                "trainer_ms": trainer_ms,
                "bare_ms": bare_ms,
                "ratio": trainer_ms / bare_ms,
                "extra_ms": trainer_ms - bare_ms,
                "data_wait_ms": 1000 * common.median(kind_samples["wait"]),
                "timed_steps": len(kind_samples["trainer"]),
            }
        )
    return rows, breakdown


def narrow_plan(family: str, inputs: dict[str, Path], options: dict):
    """``family``'s plan as ``gpu_speed.py``'s CPU check builds it, every random text encoder :data:`NARROW`, no
    DataLoader workers, no evaluation during training."""
    settings = {"precision": options["precision"], "dataloader_num_workers": 0, **NARROW_SETTINGS.get(family, {})}
    with unittest.mock.patch.dict(TINY_BERT, NARROW):
        plan = speed_plan(family, inputs, settings, options["warmup"] + options["steps"], quick=True)
    for stage in plan.stages:
        if isinstance(stage, TrainingStage):
            stage.args.eval_strategy, stage.args.load_best_model_at_end = "no", False
    return plan


def measure_family(family: str, inputs: dict[str, Path], options: dict, work: Path) -> dict:
    """Every training stage of ``family``'s plan, timed against its bare loops (:func:`train_rounds`)."""
    reason = missing_extra(family)
    if reason:
        return {"status": "skipped", "reason": reason}
    plan = narrow_plan(family, inputs, options)
    rows, breakdowns = [], []
    for index, stage in enumerate(plan.stages):  # as MethodPlan.train runs them
        if isinstance(stage, ModelUpdate):
            stage.apply(plan.model)
            continue
        if stage.args.max_steps == 0:
            continue  # a stage left out
        stage_rows, breakdown = train_rounds(
            stage, plan.model, options, STEP_KINDS.get(family, 1), work / f"{family}-{index}"
        )
        rows += stage_rows
        breakdowns.append(breakdown)
    return {"status": "passed", "rows": rows, "breakdowns": breakdowns}


def measure_reference(inputs: dict[str, Path], options: dict, work: Path) -> dict:
    """sentence-transformers' own ``SentenceTransformerTrainer`` and ``MultipleNegativesRankingLoss`` on (s, s) with
    the simcse family's plan (its model, data and arguments), timed as the families are (:func:`train_rounds`).
    transformers' NaN / inf filter of the logged loss is off, as the package's trainer sets it (the filter reads the
    loss on the host every step)."""
    plan = narrow_plan("simcse", inputs, options)
    (stage,) = plan.stages
    args = copy.copy(stage.args)
    args.logging_nan_inf_filter = False
    reference = dataclasses.replace(
        stage,
        args=args,
        loss=MultipleNegativesRankingLoss(plan.model),
        trainer_class=SentenceTransformerTrainer,
        trainer_kwargs={},
    )
    rows, breakdown = train_rounds(reference, plan.model, options, 1, work / REFERENCE)
    return {"status": "passed", "rows": rows, "breakdowns": [breakdown]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of the families")
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each kind per round")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps of each kind per round")
    parser.add_argument("--rounds", type=int, default=4, help="trainer runs, each beside a bare loop")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="bf16: autocast on the CPU")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument(
        "--shared", default=None, help="the shared folder (default: $SBERT_NONLING_SHARED or ../shared)"
    )
    args = common.parse_arguments(parser, QUICK, argv)
    if REFERENCE in args.families.split(","):
        parser.error(f"{REFERENCE!r} is the reference that every run measures, not a family to choose.")
    common.use_shared_folder(args.shared)
    common.quiet()
    common.set_threads(args.threads)
    if args.precision == "bf16" and not cpu_has_native_bf16():
        print("This CPU has no native bf16 matmul: bf16 autocast runs an emulated kernel here.")
    options = {
        **vars(args),
        "dtype": torch.bfloat16 if args.precision == "bf16" else None,
    }
    results: list[dict] = []
    breakdowns: list[dict] = []
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    measures = {family: functools.partial(measure_family, family) for family in args.families.split(",")}
    measures[REFERENCE] = measure_reference
    with tempfile.TemporaryDirectory(prefix="host-overhead-") as folder:
        work = Path(folder)
        os.chdir(work)  # the trainers' relative output folders
        inputs = speed_inputs(work / "inputs", quick=True)
        for family, measure in measures.items():
            result = common.isolated({"family": family}, functools.partial(measure, inputs, options, work))
            if result["status"] == "skipped":
                skipped[family] = result["reason"]
            elif result["status"] == "failed":
                failed[family] = result["error"]
            else:
                results += [{"family": family, **row} for row in result["rows"]]
                breakdowns += [{"family": family, **row} for row in result["breakdowns"]]
    reference = next((row for row in results if row["family"] == REFERENCE), None)
    for row in results:
        row["over_reference_ms"] = row["extra_ms"] - reference["extra_ms"] if reference else float("nan")
    columns = ["trainer_ms", "bare_ms", "ratio", "extra_ms", "over_reference_ms", "data_wait_ms", "timed_steps"]
    common.print_table(
        ["family", "stage", "step", "trainer ms", "bare ms", "ratio", "extra ms", "over reference ms"]
        + ["data wait ms", "timed steps"],
        [[row["family"], row["stage"], row["step"]] + [row[key] for key in columns] for row in results],
    )
    print(
        f"\n{REFERENCE}: its own trainer and MultipleNegativesRankingLoss on the simcse family's plan, not a method; "
        "its extra ms is the libraries' loop alone."
    )
    print("\nThe trainer's own work per step that the bare loop does not do, ms (one more run of each stage):")
    common.print_table(
        ["family", "stage", *TRAINER_ONLY, "sum", "trainer - bare (means)"],
        [
            [row["family"], row["stage"], *row["regions_ms"].values()]
            + [sum(row["regions_ms"].values()), row["trainer_minus_bare_ms"]]
            for row in breakdowns
        ],
    )
    for family, reason in skipped.items():
        print(f"{family}: skipped ({reason})")
    for family, error in failed.items():
        print(f"{family}: FAILED ({error})")
    methods = [row for row in results if row["family"] != REFERENCE]
    worst = max((row["ratio"] for row in methods), default=float("nan"))
    common.emit(
        {
            "benchmark": "host_overhead",
            "ratio": worst,
            "goal": f"every method's trainer step at most {GOAL}x the host time of its bare loop",
            "met": worst <= GOAL and not failed,
            "steps": methods,
            "reference": reference,
            "breakdowns": breakdowns,
            "failed": failed,
            "skipped": skipped,
            "settings": {key: value for key, value in options.items() if key != "dtype"},
        }
    )


if __name__ == "__main__":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before CUDA initialises: the trainers train on the CPU
    main()
