"""Run a recipe end to end: the recipe's typed config, its method's builder, the runner (dev scores, training with
best-checkpoint selection, save, export, run record)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sbert_nonling.app.recipes import recipe_config
from sbert_nonling.app.run_options import RunOptions
from sbert_nonling.app.runner import run_method
from sbert_nonling.data.sources import DataSources


def train_recipe(
    recipe: str,
    output_dir: str | Path,
    data: DataSources,
    overrides: dict[str, Any] | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    options: RunOptions = RunOptions(),
) -> dict[str, Any]:
    """Train ``recipe``: its method's typed config (:func:`recipe_config`: file, tiny block, overrides, ``max_steps``
    cap) run by :func:`~sbert_nonling.app.runner.run_method`, whose result it returns (docs/getting_started.md).

    Args:
        recipe: a name from :func:`~sbert_nonling.app.recipes.list_recipes`, or a recipe file of your own (a path
            ending in ``.json``: docs/adding_a_method.md).
        output_dir: run folder.
        data: the data sources (:class:`~sbert_nonling.data.DataSources`); the method names a missing one.
        overrides: recipe settings, e.g. ``{"learning_rate": 1e-5}``, ``{"contrastive.batch_size": 32}``, ``{"model":
            "all-MiniLM-L6-v2"}`` (a sentence-transformers model keeps its own pooling and ``max_seq_length`` unless
            those are overridden too).
        tiny: a small random encoder built offline, with the recipe's ``tiny`` settings; not with a ``model`` override.
        max_steps: stop after this many optimizer steps (of each stage run for the multi-stage methods); at least 1.
        options: how the run treats its folder and its checks
            (:class:`~sbert_nonling.app.run_options.RunOptions`): ``resume`` an interrupted run exactly
            (docs/reliability.md; not for pixel-linguist and multitask) with the settings ``allow_changed`` may change,
            ``overwrite`` the run ``output_dir`` holds once the new run has finished, ``dry_run`` (check every input
            and build the plan, then return what the run would do: precision, DataLoader workers, where it writes,
            optimizer steps and batches per dataset of each stage; touch nothing), ``allow_unused_datasets`` (a
            ``max_steps`` cap that leaves a training dataset without a batch is a warning; by default it is refused
            before the first step).

    Raises:
        TrainingCrashed: training failed (a DataLoader worker died, out of memory); names the last checkpoint.
        CheckpointWriteError: writing a checkpoint failed; earlier ones are intact, resume once fixed.
        TrainingPreempted: SIGTERM / SIGINT stopped training after a complete checkpoint; resume continues.
    """
    config = recipe_config(recipe, overrides, tiny, max_steps)
    return run_method(config, data, output_dir, options=options)
