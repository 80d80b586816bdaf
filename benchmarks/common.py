"""Helpers the benchmark scripts share: offline encoders, A/B timing, step clocks, rows as measured, memory peaks.

Not a benchmark itself and never imported by the package. Each script runs as ``python benchmarks/<name>.py``, which
puts this folder first on ``sys.path`` so ``import common`` finds this file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

import torch
from transformers import TrainerCallback

from sbert_nonling.training.arguments import cpu_has_native_bf16

REPO_DIR = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("SBERT_NONLING_SHARED", REPO_DIR / ".." / "shared")).resolve()
DATA_DIR = SHARED_DIR / "data"
WIKI_FILE = DATA_DIR / "corpus" / "wiki1m_for_simcse.first11913.txt"

#: BERT sizes (hidden, layers, heads, intermediate). "mini" is all-MiniLM-L6-v2's shape, "base" bert-base-uncased's.
ENCODER_SIZES = {
    "tiny": (128, 2, 2, 512),
    "mini": (384, 6, 12, 1536),
    "base": (768, 12, 12, 3072),
}


def wiki_sentences(limit: int = 4000) -> list[str]:
    from sbert_nonling.data import read_sentences

    return read_sentences(WIKI_FILE, limit=limit)


_ENCODER_DIRS: dict[tuple[str, int], str] = {}


def encoder_dir(size: str, vocab_size: int = 8000) -> str:
    """A random-weight BERT of one of :data:`ENCODER_SIZES`, with a WordPiece vocabulary from the wiki sample."""
    key = (size, vocab_size)
    if key not in _ENCODER_DIRS:
        from sbert_nonling.models import build_tiny_encoder

        hidden, layers, heads, intermediate = ENCODER_SIZES[size]
        folder = tempfile.mkdtemp(prefix=f"bench-{size}-")
        _ENCODER_DIRS[key] = str(
            build_tiny_encoder(
                folder,
                wiki_sentences(),
                vocab_size=vocab_size,
                hidden_size=hidden,
                num_hidden_layers=layers,
                num_attention_heads=heads,
                intermediate_size=intermediate,
            )
        )
    return _ENCODER_DIRS[key]


def set_threads(threads: int | None) -> None:
    if threads:
        torch.set_num_threads(threads)


def parse_arguments(
    parser: argparse.ArgumentParser, quick: dict[str, object], argv: list[str] | None = None
) -> argparse.Namespace:
    """Add ``--quick`` to ``parser`` and parse ``argv`` (default: the command line).

    With ``--quick`` the options named in ``quick`` default to its values: tiny sizes and one or two repeats, a run of
    seconds on a CPU through the same code as a full run (the test suite runs every script so: its figures mean
    nothing, its last line is the JSON a full run prints). Options given on the command line keep their values.

    Args:
        parser: the script's parser, with every option but ``--quick``.
        quick: option destination (``image_size``) -> its value in the quick run.
        argv: the arguments to parse; None: ``sys.argv[1:]``.

    Returns:
        The parsed arguments, ``quick`` among them.
    """
    settings = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in quick.items())
    parser.add_argument(
        "--quick", action="store_true", help=f"a run of seconds on the CPU (the tests' check): {settings}"
    )
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**quick)
        args = parser.parse_args(argv)
    return args


def gpu_run_parser(benchmark: str, description: str, quick: str, steps: str) -> argparse.ArgumentParser:
    """The command line that gpu_check.py and gpu_speed.py share; each script adds its own options to it.

    ``--device cuda|cpu``, ``--quick`` (help: ``quick``), ``--steps`` (help: ``steps``; default None: the script
    picks), ``--families`` (default None: all), ``--rows`` (default ``runs/<benchmark>-<UTC time>.jsonl``),
    ``--shared`` and ``--threads`` (1). :func:`apply_run_arguments` applies ``--device`` and ``--shared`` once parsed.

    Args:
        benchmark: the script's name, as its rows file is named.
        description: the parser's description (the first line of the script's docstring).
        quick: what ``--quick`` changes.
        steps: what ``--steps`` counts, with its defaults.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: hide the GPUs (CI check)")
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--steps", type=int, default=None, help=steps)
    parser.add_argument("--families", default=None, help="comma-separated subset of the families (default: all)")
    parser.add_argument(
        "--rows",
        type=Path,
        default=None,
        help=f"JSON-lines file each row is appended to (default: runs/{benchmark}-<UTC time>.jsonl)",
    )
    parser.add_argument(
        "--shared", default=None, help="the shared folder (default: $SBERT_NONLING_SHARED or ../shared)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the main process")
    return parser


def use_shared_folder(shared: str | None) -> None:
    """Read the data from ``shared`` (None: keep :data:`SHARED_DIR`): its absolute path becomes :data:`SHARED_DIR`
    (with :data:`DATA_DIR` and :data:`WIKI_FILE`) and ``$SBERT_NONLING_SHARED``, which the package and the child
    processes read; the scripts that train in a temporary folder (their trainers' relative output folders) still find
    a relative ``--shared`` there.

    Args:
        shared: a ``--shared`` option's value.
    """
    global SHARED_DIR, DATA_DIR, WIKI_FILE
    if shared:
        SHARED_DIR = Path(shared).resolve()
        os.environ["SBERT_NONLING_SHARED"] = str(SHARED_DIR)
        DATA_DIR = SHARED_DIR / "data"
        WIKI_FILE = DATA_DIR / "corpus" / WIKI_FILE.name


def apply_run_arguments(args: argparse.Namespace) -> None:
    """Apply :func:`gpu_run_parser`'s ``--shared`` (:func:`use_shared_folder`) and ``--device`` before anything runs:
    ``--device cpu`` empties ``CUDA_VISIBLE_DEVICES``, so that the trainers see no GPU (importing this module does not
    initialise CUDA, so the setting still takes effect).

    Args:
        args: the parsed command line.
    """
    use_shared_folder(args.shared)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def interleave(candidates: dict[str, Callable[[], list[float]]], rounds: int) -> dict[str, list[float]]:
    """Run every candidate once per round, A B then B A (order reversed every other round), pooling their samples.

    Each candidate returns a list of per-step seconds; alternating in one process means machine noise (another job on
    the shared cores, frequency changes) hits every candidate alike, so ratios stay meaningful when seconds do not.
    """
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for round_index in range(rounds):
        for name in names if round_index % 2 == 0 else names[::-1]:
            samples[name].extend(candidates[name]())
    return samples


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def timed_steps(
    step: Callable[[], object], steps: int, warmup: int = 1, clock: Callable[[], float] = time.perf_counter
) -> list[float]:
    """Seconds of each of ``steps`` calls of ``step`` after ``warmup`` untimed calls, read from ``clock`` (wall time;
    ``time.process_time`` counts this process's CPU seconds instead, which other jobs on the cores hardly move)."""
    for _ in range(warmup):
        step()
    seconds = []
    for _ in range(steps):
        start = clock()
        step()
        seconds.append(clock() - start)
    return seconds


class StepClock(TrainerCallback):
    """Wall time between consecutive ``on_step_end`` events: data loading, collate, forward, backward, optimizer,
    scheduler and the trainer's own bookkeeping of one optimizer step (everything a user waits for)."""

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.losses: list[float] = []

    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses.append(float(logs["loss"]))

    def step_seconds(self, skip: int = 1) -> list[float]:
        """Intervals between step ends, dropping the first ``skip`` steps (warm-up: allocator, optimizer state)."""
        gaps = [later - earlier for earlier, later in zip(self.ends, self.ends[1:])]
        return gaps[max(skip - 1, 0) :]


def trainer_arguments(output_dir: str, max_steps: int, batch_size: int, **overrides):
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    settings = {
        "output_dir": output_dir,
        "max_steps": max_steps,
        "per_device_train_batch_size": batch_size,
        "learning_rate": 3e-5,
        "batch_sampler": BatchSamplers.BATCH_SAMPLER,
        "save_strategy": "no",
        "report_to": "none",
        "logging_steps": 1,
        "dataloader_drop_last": True,
        "use_cpu": True,
        "disable_tqdm": True,
        "seed": 0,
        "lr_scheduler_type": "constant",
    }
    settings.update(overrides)
    return SentenceTransformerTrainingArguments(**settings)


def silence(trainer) -> None:
    """Remove the trainer's progress bar / log printer (the per-step log lines would bury the table)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)


class QuietTraining:
    """``TrainingStage.run``'s ``before_training`` for a measured run: sets the stage's trainer to train into
    ``output_dir`` without evaluation, checkpoints or logs before the end, with ``callback`` measuring its steps, and
    keeps it as :attr:`trainer` for what is read from it after training. Called directly on a trainer built by hand,
    it sets that one up the same way.

    Args:
        callback: the callback that measures the steps.
        output_dir: the trainer's output folder.
        max_steps: the run's steps (the one log comes after the last).
    """

    def __init__(self, callback: TrainerCallback, output_dir: Path, max_steps: int) -> None:
        self.callback = callback
        self.output_dir = output_dir
        self.max_steps = max_steps
        self.trainer = None

    def __call__(self, trainer) -> None:
        trainer.args.output_dir = str(self.output_dir)
        trainer.args.set_logging(strategy="steps", steps=self.max_steps + 1, report_to="none")
        trainer.args.set_save(strategy="no")
        silence(trainer)
        trainer.add_callback(self.callback)
        self.trainer = trainer


def quiet() -> None:
    """Silence the trainer's per-step logging and the library warnings that would bury the table."""
    import logging
    import warnings

    import transformers

    transformers.logging.set_verbosity_error()
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    logging.getLogger("sbert_nonling").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


def machine() -> dict[str, object]:
    model_name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model_name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model_name,
        "cpu_count": os.cpu_count(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "native_bf16": cpu_has_native_bf16(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": version("torch"),
        "transformers": version("transformers"),
        "sentence_transformers": version("sentence-transformers"),
    }


def print_table(header: list[str], rows: list[list[object]]) -> None:
    def cell(value: object) -> str:
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    cells = [[cell(value) for value in row] for row in rows]
    widths = [max(len(header[i]), *(len(row[i]) for row in cells)) for i in range(len(header))]
    print("  ".join(name.rjust(width) for name, width in zip(header, widths)))
    for row in cells:
        print("  ".join(value.rjust(width) for value, width in zip(row, widths)))


def emit(result: dict[str, object]) -> None:
    """The last line of every benchmark: one JSON object (ratio, goal, figures, machine)."""
    result.setdefault("machine", machine())
    print(json.dumps(result, default=float))


class RowLog:
    """The rows of one run: each printed and appended, flushed, to a JSON-lines file the moment it is measured.

    Args:
        path: The JSON-lines file; created with its folder if missing, appended to if it exists.
        names: The fields that name a row in the printed line and in :meth:`name` (those it has).
    """

    def __init__(self, path: Path, names: tuple[str, ...] = ("check", "family", "precision")) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.names = names
        self.rows: list[dict] = []

    def name(self, row: dict) -> str:
        """The row's naming fields, space-separated (e.g. ``family visualcse bf16``)."""
        return " ".join(str(row[key]) for key in self.names if key in row)

    def add(self, row: dict) -> dict:
        """Store ``row`` (closing the file flushes it to the operating system), print its summary, and return it."""
        self.rows.append(row)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(row, default=float) + "\n")
        detail = row.get("error") or row.get("reason") or ""
        print(f"{self.name(row)}: {row['status']}" + (f" ({detail})" if detail else ""), flush=True)
        return row

    def failed(self) -> list[dict]:
        """The rows whose status is ``failed``."""
        return [row for row in self.rows if row["status"] == "failed"]


def error_text(error: BaseException) -> str:
    """The error's type and the first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def isolated(fields: dict, check: Callable[[], dict]) -> dict:
    """``fields`` plus the result of ``check()``, or, if it raises, a ``failed`` row with the error (the traceback
    goes to stderr); an ``Exception`` never stops the run."""
    try:
        return {**fields, **check()}
    except Exception as error:
        traceback.print_exc()
        return {**fields, "status": "failed", "error": error_text(error)}
    finally:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # what a failed check left behind is not charged to the next one


def prepare_inputs(root: Path, quick: bool, images: int = 12) -> dict[str, Path]:
    """Small copies of the shared data under ``root``: wiki sentences and NLI triplets (128 / 97 lines with ``quick``,
    else 512 / 257), STS / SICK task files, the first ``images`` Flickr8k photos and their captions."""
    data = DATA_DIR
    if not data.is_dir():
        raise ValueError(
            f"The shared data folder {str(data)!r} is missing; pass --shared or set SBERT_NONLING_SHARED."
        )

    def head(source: Path, target: Path, lines: int | slice) -> Path:
        rows = source.read_text(encoding="utf-8").splitlines()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            "\n".join(rows[lines] if isinstance(lines, slice) else rows[:lines]) + "\n", encoding="utf-8"
        )
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
    names, captions = flickr_photos(data, images)
    for name in names:
        shutil.copy(data / "images" / "flickr8k" / name, flickr / "images" / name)
    (flickr / "captions.txt").write_text(captions, encoding="utf-8")
    return {"wiki": wiki, "nli": nli, "tasks": tasks, "flickr": flickr}


def flickr_photos(data: Path, photos: int) -> tuple[list[str], str]:
    """The first ``photos`` Flickr8k photos of the shared data (sorted file names) and the lines of
    ``Flickr8k.token.txt`` that caption them, as that file's text."""
    names = sorted(path.name for path in (data / "images" / "flickr8k").iterdir())[:photos]
    tokens = (data / "corpus" / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    return names, "\n".join(line for line in tokens if line.split("#")[0] in names) + "\n"


def process_memory_mib(field: str) -> float:
    """A memory field of ``/proc/self/status`` (``VmRSS``: resident now; ``VmHWM``: its high-water mark) in MiB."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"/proc/self/status has no field {field!r}.")


def reset_peak_memory(device: torch.device) -> float:
    """Start a new peak-memory window on ``device`` and return the MiB in use now: on CUDA the allocated tensors
    (``torch.cuda.reset_peak_memory_stats``), on the CPU the process's resident set, whose high-water mark (VmHWM) is
    reset by writing 5 to ``/proc/self/clear_refs`` (Linux). ``resource.getrusage``'s ``ru_maxrss`` is the same mark
    but cannot be reset, and tracemalloc does not see torch's allocations."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        return torch.cuda.memory_allocated(device) / 2**20
    Path("/proc/self/clear_refs").write_text("5", encoding="utf-8")
    return process_memory_mib("VmRSS")


def peak_memory(device: torch.device) -> float:
    """The peak MiB on ``device`` since :func:`reset_peak_memory`."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) / 2**20
    return process_memory_mib("VmHWM")


def bare_optimizer(trainer, dataset_name: str | None) -> tuple[torch.optim.Optimizer, object]:
    """A fresh ``torch.optim.AdamW`` of the same implementation (fused / foreach) over the parameter groups that
    ``trainer`` steps for ``dataset_name`` (a modality's own optimizer under the alternating scheme), and a constant
    schedule: the optimizer of :func:`bare_step`."""
    trained = (
        trainer.modality_optimizer.optimizers[dataset_name]
        if getattr(trainer, "modality_optimizer", None) is not None
        else trainer.optimizer
    )
    groups = [{key: value for key, value in group.items() if key != "initial_lr"} for group in trained.param_groups]
    optimizer = torch.optim.AdamW(groups, **{key: trained.defaults[key] for key in ("fused", "foreach")})
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, constant_rate)


def constant_rate(step: int) -> float:
    """The learning-rate factor of a constant schedule."""
    return 1.0


def bare_step(trainer, batches: list[dict[str, object]], optimizer: torch.optim.Optimizer, scheduler) -> None:
    """One optimizer step by hand: the loss of each batch (its share of the accumulated step), backward, clipping,
    AdamW, the schedule, zero_grad."""
    for batch in batches:
        batch = dict(batch)
        name = batch.pop("dataset_name", None)
        loss_fn = trainer.loss[name] if isinstance(trainer.loss, dict) else trainer.loss
        features, labels = trainer.collect_features(batch)
        loss = loss_fn(features, labels)
        if isinstance(loss, dict):
            loss = sum(loss.values())
        if len(batches) > 1:
            loss = loss / len(batches)
        loss.backward()
    if trainer.args.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), trainer.args.max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
