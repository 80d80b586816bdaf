"""Reproduce a paper's STS table: train recipes over several seeds (and a small grid), select on STS-B dev, score
the 7 STS test sets and compare mean +- sd with the paper."""

from __future__ import annotations

import itertools
import json
import logging
import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sbert_nonling.app.output_folder import continuation
from sbert_nonling.app.recipes import paper_result, recipe_config, recipe_name
from sbert_nonling.app.run_options import RunOptions
from sbert_nonling.app.runner import run_method
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.paper_results import PaperResult
from sbert_nonling.evaluation.sts_data import STS_TASKS, STSData, check_sts_test_dir
from sbert_nonling.training.run_settings import changed_settings, check_resume_point, describe_changes

logger = logging.getLogger(__name__)

#: The run record of a finished training run (written by the runner last).
RESULTS_FILE = "results.json"
#: A run's scores on the 7 STS test sets, kept beside its run record so that a resumed reproduction reuses them.
TEST_SCORES_FILE = "test_scores.json"
#: The columns of the table: the 7 tasks, then their average.
COLUMNS = (*STS_TASKS, "avg")


@dataclass
class GridPoint:
    """One cell of the search: a text learning rate and batch size.

    Args:
        learning_rate: the text learning rate (None: the recipe's).
        batch_size: the text batch size (None: the recipe's).
    """

    learning_rate: float | None = None
    batch_size: int | None = None

    @property
    def label(self) -> str:
        """The folder name of the cell: ``recipe`` (the recipe's settings) or e.g. ``lr3e-05-bs64``."""
        parts = [f"lr{self.learning_rate:g}" if self.learning_rate is not None else ""]
        parts.append(f"bs{self.batch_size}" if self.batch_size is not None else "")
        return "-".join(part for part in parts if part) or "recipe"

    def overrides(self) -> dict[str, Any]:
        """The recipe settings this cell changes."""
        values = {"learning_rate": self.learning_rate, "batch_size": self.batch_size}
        return {key: value for key, value in values.items() if value is not None}


@dataclass
class SeedRun:
    """One training run of a reproduction.

    Args:
        recipe: the recipe it trains.
        cell: the label of its grid cell (:attr:`GridPoint.label`).
        seed: its seed.
        folder: its run folder.
        dev: its STS-B dev score (x100) of the checkpoint the run selected on STS-B dev.
        test: for the selected cell, its scores on the 7 STS test sets (task -> x100, ``"avg"`` included).
        mteb: the same through MTEB (with ``mteb=True``).
        encoder: the encoder it started from (a Hub name or folder, or ``"tiny random encoder"`` with ``tiny``).
        tiny: it trained a small random encoder built offline (``--tiny``).
        steps: the optimizer steps it trained (all stages together).
        departures: how its settings depart from the recipe's, i.e. from the paper's setting (``tiny``, a step cap,
            ``--set`` overrides); empty for a run of the paper's setting.
    """

    recipe: str
    cell: str
    seed: int
    folder: str
    dev: float
    test: dict[str, float] = field(default_factory=dict)
    mteb: dict[str, float] = field(default_factory=dict)
    encoder: str = ""
    tiny: bool = False
    steps: int = 0
    departures: list[str] = field(default_factory=list)


@dataclass
class PlannedRun:
    """One run a reproduction will train or reuse: where, and with which settings.

    Args:
        recipe: the recipe it trains.
        cell: its grid cell.
        seed: its seed.
        folder: its run folder.
        config: its resolved settings (:func:`~sbert_nonling.app.recipes.recipe_config`).
    """

    recipe: str
    cell: GridPoint
    seed: int
    folder: Path
    config: MethodConfig


def mean_and_sd(values: list[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (0 for a single value).

    Args:
        values: at least one number.
    """
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def reproduce(
    recipes: list[str],
    output_dir: str | Path,
    data: DataSources,
    seeds: int = 5,
    learning_rates: list[float] | None = None,
    batch_sizes: list[int] | None = None,
    overrides: dict[str, Any] | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    mteb: bool = False,
    options: RunOptions = RunOptions(),
    progress: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Train each recipe ``seeds`` times in every cell of the grid (``learning_rates`` x ``batch_sizes``), select
    the cell with the best mean STS-B dev score, score that cell's runs on the 7 STS test sets and summarise them
    beside the paper's values (each recipe's ``"paper"`` block: :func:`~sbert_nonling.app.recipes.paper_result`).

    Each run is an ordinary :func:`~sbert_nonling.app.runner.train_recipe` run (the same settings, the same runner) in
    ``output_dir/<recipe>/<cell>/seed-<seed>`` (seeds: the recipe's seed, then the next ones), so a run keeps every
    guarantee of ``train``. ``resume`` continues a reproduction stopped at any moment: finished runs are reused,
    interrupted ones resumed (a multi-stage recipe restarts its run), runs stopped before their first checkpoint and
    missing ones trained; a run, finished or interrupted, trained with other settings than asked for now is refused
    before any training step, its differing settings named. ``overwrite`` trains every run again, each
    replacing its earlier run once it has finished. The table marks the rows whose runs depart from the paper's
    setting (``tiny``, ``max_steps``, ``overrides``), and the report records each run's encoder and steps. Writes
    ``reproduce.md`` (the table), ``reproduce.json`` (every run and the summary) and, with the ``plots`` extra,
    ``reproduce_seeds.png`` (each run's average).

    Args:
        recipes: recipe names (:func:`~sbert_nonling.app.recipes.list_recipes`), e.g. ``["simcse-unsup",
            "visualcse"]``, or recipe files of your own (``"runs/warm-simcse.json"``: its runs and rows go by
            ``warm-simcse``).
        output_dir: the reproduction's folder.
        data: the data sources of the recipes; ``data.sts_dir`` must hold STS-B dev and the 7 test sets.
        seeds: training runs per recipe and cell.
        learning_rates: text learning rates to search (default: the recipe's).
        batch_sizes: text batch sizes to search (default: the recipe's).
        overrides: recipe settings applied to every run (``--set``).
        tiny: small random encoders built offline (for a quick check of the pipeline, not of the paper).
        max_steps: cap every run's optimizer steps.
        mteb: also score the selected runs through MTEB (the local test files put into MTEB's tasks).
        options: ``resume`` (continue a reproduction in ``output_dir``), ``overwrite`` (train every run of
            ``output_dir`` again) and ``allow_unused_datasets`` (given to each run) of
            :class:`~sbert_nonling.app.run_options.RunOptions`; a ``dry_run`` or ``allow_changed`` is refused (check
            a recipe with ``train --dry-run``; a reproduction's runs all have its settings).
        progress: called with one line per run as it finishes (trained or reused: its steps and STS-B dev) and per
            scored test run (the command line prints them); the lines are logged either way.

    Returns:
        ``{"runs": [SeedRun as dict, ...], "selected": {recipe: cell}, "summary": {recipe: {task: [mean, sd]}},
        "paper": {recipe: {...}}, "table": markdown}``.

    Example::

        import os
        from sbert_nonling.app.reproduce import reproduce
        from sbert_nonling.data import DataSources

        data = os.environ["SBERT_NONLING_SHARED"] + "/data"
        sources = DataSources(text_file=data + "/corpus/wiki1m_for_simcse.first11913.txt", sts_dir=data + "/sts")
        try:  # this STS folder holds the dev sets only: checked before any training step
            reproduce(["simcse-unsup"], "table", sources, seeds=2, tiny=True, max_steps=2)
        except ValueError as error:
            print(error)  # The STS folder ... lacks the test set of STS12, STS13, ...
        # with SentEval's STS folder: print(reproduce(["simcse-unsup", "visualcse"], "table", sources)["table"])
    """
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}.")
    if options.resume and options.overwrite:
        raise ValueError("Pass either resume (--resume) or overwrite (--overwrite), not both.")
    if options.dry_run or options.allow_changed:
        raise ValueError(
            "reproduce has no dry run and takes no allow_changed: check a recipe with `sbert-nonling train RECIPE "
            "--dry-run` (train_recipe(..., options=RunOptions(dry_run=True))); every run of a reproduction has its "
            "settings."
        )
    test_tasks = check_sts_test_dir(data.sts_dir)
    rates: list[float | None] = list(learning_rates) if learning_rates else [None]
    sizes: list[int | None] = list(batch_sizes) if batch_sizes else [None]
    cells = [GridPoint(learning_rate, batch_size) for learning_rate, batch_size in itertools.product(rates, sizes)]
    files = {recipe_name(recipe): recipe for recipe in recipes}  # a recipe file's runs go by its name
    configs = {name: recipe_config(recipe, overrides, tiny, max_steps) for name, recipe in files.items()}
    for recipe, config in configs.items():
        searched = {key for cell in cells for key in cell.overrides()}
        if searched and config.stages():
            raise ValueError(
                f"Recipe {recipe!r} trains in stages, each with its own learning rate and batch size: search them "
                "with --set (e.g. contrastive.learning_rate=...) instead of --learning-rates / --batch-sizes."
            )
    output_dir = Path(output_dir)
    if output_dir.is_dir() and any(output_dir.iterdir()) and not (options.resume or options.overwrite):
        raise ValueError(
            f"{output_dir} already holds a reproduction: pass --resume (RunOptions(resume=True)) to continue it or "
            "--overwrite (RunOptions(overwrite=True)) to train its runs again."
        )
    planned = [
        PlannedRun(
            recipe,
            cell,
            seed,
            output_dir / recipe / cell.label / f"seed-{seed}",
            recipe_config(files[recipe], {**(overrides or {}), **cell.overrides(), "seed": seed}, tiny, max_steps),
        )
        for recipe, config in configs.items()
        for cell in cells
        for seed in range(config.seed, config.seed + seeds)
    ]
    if options.resume:
        check_unchanged(planned)
    departures = setting_departures(tiny, max_steps, overrides)
    runs: list[SeedRun] = []
    for number, plan in enumerate(planned, start=1):
        label = f"run {number}/{len(planned)}: {plan.recipe} {plan.cell.label} seed {plan.seed}"
        started = time.perf_counter()
        result, reused = _train_once(plan, data, options)
        dev = result["dev_after"]["STSBenchmark"]
        what = "finished earlier, reused" if reused else f"trained in {time.perf_counter() - started:.1f} s"
        _report(progress, f"{label}: {what}; {result['global_step']} steps, STS-B dev {dev:.2f}")
        encoder = "tiny random encoder" if plan.config.tiny else plan.config.model
        runs.append(
            SeedRun(
                plan.recipe,
                plan.cell.label,
                plan.seed,
                str(plan.folder),
                dev,
                encoder=encoder,
                tiny=plan.config.tiny,
                steps=result["global_step"],
                departures=departures,
            )
        )
    selected = {recipe: _best_cell([run for run in runs if run.recipe == recipe]) for recipe in configs}
    chosen = [run for run in runs if run.cell == selected[run.recipe]]
    for number, run in enumerate(chosen, start=1):
        started = time.perf_counter()
        run.test, run.mteb = _test_scores(Path(run.folder), test_tasks, mteb)
        _report(
            progress,
            f"test sets {number}/{len(chosen)}: {run.recipe} {run.cell} seed {run.seed}: avg {run.test['avg']:.2f} "
            f"({time.perf_counter() - started:.1f} s)",
        )
    return write_report(runs, selected, output_dir, {name: paper_result(recipe) for name, recipe in files.items()})


def _report(progress: Callable[[str], object] | None, line: str) -> None:
    """One line of a reproduction's progress: logged, and given to ``progress`` (the command line prints it)."""
    logger.info(line)
    if progress is not None:
        progress(line)


def setting_departures(tiny: bool, max_steps: int | None, overrides: dict[str, Any] | None) -> list[str]:
    """How a reproduction's runs depart from their recipes' settings, which are the papers' (the table marks such
    rows): a tiny random encoder, a step cap, settings changed with ``--set`` / ``--model``.

    Args:
        tiny: the runs train small random encoders built offline.
        max_steps: the step cap of every run (None: the recipe's full run).
        overrides: recipe settings changed for every run.
    """
    departures = ["tiny random encoder (--tiny)"] if tiny else []
    if max_steps is not None:
        departures.append(f"at most {max_steps} steps per run (--max-steps)")
    departures.extend(f"{key}={value!r} (--set)" for key, value in (overrides or {}).items())
    return departures


def check_unchanged(planned: list[PlannedRun]) -> None:
    """Before a resumed reproduction trains anything: a ValueError, naming every differing setting, when a finished
    run (its ``recipe.json``) or an interrupted one (its newest intact checkpoint) was trained with other settings
    than the reproduction now asks for; ``train --resume`` refuses the same (:func:`check_resume_settings`).

    Args:
        planned: the reproduction's runs, with the settings each is to have.
    """
    for plan in planned:
        recorded = plan.folder / "recipe.json"
        if (plan.folder / RESULTS_FILE).is_file() and recorded.is_file():
            changed = changed_settings(json.loads(recorded.read_text(encoding="utf-8")), plan.config.to_dict())
            if changed:
                raise ValueError(
                    f"--resume with other settings than the finished run in {plan.folder} was trained with "
                    f"({describe_changes(changed)}). Resume with the reproduction's settings, or pass --overwrite "
                    "(RunOptions(overwrite=True)) to train its runs again."
                )
            continue
        if plan.config.resumable:
            check_resume_point(plan.folder / "checkpoints", plan.config.to_dict())


def _train_once(plan: PlannedRun, data: DataSources, options: RunOptions) -> tuple[dict[str, Any], bool]:
    """The run record of one run and whether it was reused: read from a finished run when resuming, else from
    :func:`~sbert_nonling.app.runner.run_method`. Resuming, a run that has not finished is resumed from its
    checkpoints, restarted (a method that does not resume, or a saving left half done without checkpoints) or started
    (its folder holds nothing of a run: a stop came before its first checkpoint): :func:`continuation`."""
    record = plan.folder / RESULTS_FILE
    if options.resume and record.is_file():
        logger.info(f"{plan.folder}: finished earlier, reused.")
        return json.loads(record.read_text(encoding="utf-8")), True
    how = continuation(plan.folder, plan.config.resumable) if options.resume else "start"
    run_options = RunOptions(
        resume=how == "resume",
        overwrite=options.overwrite or how == "restart",
        allow_unused_datasets=options.allow_unused_datasets,
    )
    result = run_method(plan.config, data, plan.folder, options=run_options)
    return result, False


def _best_cell(runs: list[SeedRun]) -> str:
    """The cell whose runs have the best mean STS-B dev score (the first cell on a tie)."""
    cells: dict[str, list[float]] = {}
    for run in runs:
        cells.setdefault(run.cell, []).append(run.dev)
    means = {cell: statistics.fmean(scores) for cell, scores in cells.items()}
    return max(means, key=means.__getitem__)


def _test_scores(folder: Path, tasks: list[STSData], mteb: bool) -> tuple[dict[str, float], dict[str, float]]:
    """A run's scores on the 7 test sets (and through MTEB): computed once, then read from ``test_scores.json``."""
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.evaluation.sts import evaluate_sts

    cached = folder / TEST_SCORES_FILE
    scores = json.loads(cached.read_text(encoding="utf-8")) if cached.is_file() else {}
    if "sts" in scores and ("mteb" in scores or not mteb):
        return scores["sts"], scores.get("mteb", {})
    record = json.loads((folder / RESULTS_FILE).read_text(encoding="utf-8"))
    path = record["export"] or record["model"]  # the plain text model where the method has one
    model = SentenceTransformer(path, trust_remote_code=not record["export"])
    scores["sts"] = evaluate_sts(model, tasks)
    if mteb:
        from sbert_nonling.evaluation.mteb_runner import evaluate_sts_mteb

        scores["mteb"] = evaluate_sts_mteb(model, tasks, model_name=f"local/{folder.name}")
    partial = cached.with_suffix(".partial")
    partial.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, cached)  # a stop while writing leaves the earlier file or none, never half of one
    return scores["sts"], scores.get("mteb", {})


def summarise(runs: list[SeedRun], selected: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    """Per recipe, the selected cell's ``[mean, sd]`` over its seeds for every column (tasks, ``avg``, ``dev``).

    Args:
        runs: every run, with test scores for the selected cells.
        selected: recipe -> the label of its selected cell.
    """
    summary: dict[str, dict[str, list[float]]] = {}
    for recipe, cell in selected.items():
        chosen = [run for run in runs if run.recipe == recipe and run.cell == cell]
        columns = {name: [run.test[name] for run in chosen] for name in COLUMNS}
        columns["dev"] = [run.dev for run in chosen]
        summary[recipe] = {name: list(mean_and_sd(values)) for name, values in columns.items()}
    return summary


def format_table(
    summary: dict[str, dict[str, list[float]]],
    runs: list[SeedRun],
    selected: dict[str, str],
    papers: Mapping[str, PaperResult | None],
) -> str:
    """The markdown table: per recipe a row of mean +- sd over its seeds and a row of the paper's values, then the
    sources of the paper's values.

    Args:
        summary: :func:`summarise`'s result.
        runs: every run (to count the seeds).
        selected: recipe -> the label of its selected cell.
        papers: recipe -> what its paper reports (:func:`~sbert_nonling.app.recipes.paper_result`; None: nothing).
    """
    header = ["run", *COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes: list[str] = []
    for recipe, columns in summary.items():
        chosen = [run for run in runs if run.recipe == recipe and run.cell == selected[recipe]]
        departures = sorted({departure for run in chosen for departure in run.departures})
        mark = " *" if departures else ""
        if departures:
            steps = sorted({run.steps for run in chosen})
            encoders = ", ".join(sorted({run.encoder for run in chosen if run.encoder}))
            notes.append(
                f"- {recipe}: {'; '.join(departures)}; encoder {encoders or 'unknown'}; "
                f"{'/'.join(map(str, steps))} optimizer steps"
            )
        cells = [f"{columns[name][0]:.2f} ± {columns[name][1]:.2f}" for name in COLUMNS]
        lines.append(f"| {recipe} ({selected[recipe]}, {len(chosen)} seeds){mark} | " + " | ".join(cells) + " |")
        paper = papers.get(recipe)
        if paper is not None:
            values = [f"{paper.tasks[name]:.2f}" if name in paper.tasks else "" for name in STS_TASKS]
            lines.append(f"| {recipe}, paper | " + " | ".join([*values, f"{paper.average:.2f}"]) + " |")
    if notes:
        lines += ["", "\\* Not the paper's setting, so not comparable with its values:", *notes]
    sources = [
        f"- {recipe}: {paper.source}" for recipe, paper in papers.items() if recipe in summary and paper is not None
    ]
    return "\n".join(lines + ([""] + ["Paper values:"] + sources if sources else [])) + "\n"


def write_report(
    runs: list[SeedRun], selected: dict[str, str], output_dir: Path, papers: Mapping[str, PaperResult | None]
) -> dict[str, Any]:
    """Write ``reproduce.md``, ``reproduce.json`` and (with the ``plots`` extra) ``reproduce_seeds.png``; return the
    report :func:`reproduce` returns.

    Args:
        runs: every run, with test scores for the selected cells.
        selected: recipe -> the label of its selected cell.
        output_dir: the reproduction's folder.
        papers: recipe -> what its paper reports (None: nothing).
    """
    summary = summarise(runs, selected)
    table = format_table(summary, runs, selected, papers)
    reported = {recipe: paper for recipe, paper in papers.items() if recipe in summary and paper is not None}
    report = {
        "runs": [asdict(run) for run in runs],
        "selected": selected,
        "summary": summary,
        "paper": {recipe: asdict(paper) for recipe, paper in reported.items()},
        "table": table,
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "reproduce.md").write_text(table, encoding="utf-8")
    (output_dir / "reproduce.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    try:
        from sbert_nonling.evaluation.plots import plot_seed_scores
    except ImportError as error:
        logger.warning(f"No plot of the seeds: {error}")
    else:
        chosen = {
            recipe: [run.test["avg"] for run in runs if run.recipe == recipe and run.cell == cell]
            for recipe, cell in selected.items()
        }
        paper = {recipe: reported[recipe].average for recipe in chosen if recipe in reported}
        report["plot"] = str(plot_seed_scores(chosen, paper, output_dir / "reproduce_seeds.png"))
    return report
