"""Run a recipe end to end: the recipe's typed config, its method's builder, the runner (dev scores, training with
best-checkpoint selection, save, export, run record)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sbert_nonling.app.recipes import load_recipe
from sbert_nonling.app.runner import run_method
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig
from sbert_nonling.data.sources import DataSources


def _cap_steps(config: MethodConfig, max_steps: int) -> MethodConfig:
    """``config`` with training stopped after ``max_steps`` optimizer steps: of the run, or of each stage run (a stage
    left out stays left out)."""
    stages = config.stages()
    capped = {name: stage.capped(max_steps) for name, stage in stages.items()} if stages else {"max_steps": max_steps}
    return config.replace("the max_steps option", **capped)


def train_recipe(
    recipe: str,
    output_dir: str | Path,
    data: DataSources,
    overrides: dict[str, Any] | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    resume: bool = False,
    overwrite: bool = False,
    allow_changed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Train ``recipe`` and leave ``output_dir/model`` (full model), ``output_dir/export`` (plain text checkpoint),
    each with a model card, ``output_dir/checkpoints`` (trainer checkpoints; ``stages/<run>/checkpoints`` for multitask
    and pixel-linguist), ``output_dir/recipe.json`` (the settings
    used) and ``output_dir/results.json`` (the returned result).

    With ``data.sts_dir`` the dev tasks found there (STS-B dev, SICK trial) are scored before and after training, STS-B dev
    is evaluated every ``eval_steps`` steps and the best checkpoint on it is kept (``load_best_model_at_end``).
    The recipe is loaded into its method's typed config (:func:`load_recipe`), and
    :func:`~sbert_nonling.app.runner.run_method` runs the plan its method's builder
    (:data:`~sbert_nonling.methods.BUILDERS`) makes of it and the data.

    Args:
        recipe: a name from :func:`~sbert_nonling.app.recipes.list_recipes`.
        output_dir: run folder.
        data: the data sources (:class:`~sbert_nonling.data.DataSources`: training files, folders or Hub datasets,
            ``sts_dir`` for dev scores and model selection, ...); the method reads the ones it needs and names a
            missing one.
        overrides: recipe settings to override, e.g. ``{"learning_rate": 1e-5}``, ``{"contrastive.batch_size": 32}``
            (a stage's setting), ``{"model": "all-MiniLM-L6-v2"}`` (the starting encoder: a Hub name or folder; a
            sentence-transformers model is continued with its own Pooling, Dense, Normalize, prompts and
            ``max_seq_length``, unless ``pooling`` / ``max_seq_length`` are overridden too; logged), ``{"precision":
            "bf16"}`` (``auto``: bf16 on a GPU with bf16, fp16 with loss scaling on an older GPU, fp32 on a CPU; the run
            logs and records which; bf16 on a CPU without native bf16 matmul is logged as a warning, it is 30x slower
            or worse there, docs/benchmarks.md).
        tiny: start from a small random encoder built offline from the training text (see ``build_tiny_encoder``)
            and use the recipe's ``tiny`` settings; not with an overridden ``model``.
        max_steps: stop after this many optimizer steps (of each stage run for the multi-stage methods).
        resume: continue an interrupted run in the same ``output_dir`` from its newest intact checkpoint (model,
            per-modality optimizers and schedules, loss heads, data position, RNG states); the result is the run
            an uninterrupted call would have given. Not for pixel-linguist and multitask, whose stages restart.
            A folder with no complete checkpoint, or with a finished run, is refused with a ValueError.
        overwrite: replace the finished (or interrupted) run ``output_dir`` may hold; without it such a folder is
            refused with a ValueError before anything is written (:func:`prepare_output_dir`).
        allow_changed: settings a resume may change although the run was started with other values (only safe ones,
            :data:`~sbert_nonling.training.run_settings.SAFE_TO_CHANGE`, e.g. ``eval_steps``); any other difference
            from the settings recorded in the checkpoint is refused with a ValueError listing them. Accepted changes are
            recorded (``"settings_changed_on_resume"`` in the result).

    Image recipes whose ``vit`` setting is None (``overrides={"vit": None}``) start from a random patch embedding
    of ``img_size`` / ``patch_size`` instead of a ViT checkpoint's (tiny runs always do).

    Raises:
        CheckpointWriteError: writing a checkpoint failed (disk full, no permission); earlier checkpoints are
            intact, resume once the cause is fixed.
        TrainingPreempted: SIGTERM / SIGINT stopped training after writing a complete checkpoint; resume continues.

    Returns:
        :func:`~sbert_nonling.app.runner.run_method`'s result: ``{"recipe", "model", "export", "dev_before",
        "dev_after", "multilingual_before", "multilingual_after", "best_checkpoint", "global_step"}`` plus, for the
        single-run recipes, ``"dev_curve"`` (``[[step, STS-B dev], ...]`` of the evaluations during training),
        ``"train_seconds"``, ``"step_seconds"`` / ``"step_counts"`` (forward + backward time and batches per training
        dataset, see :class:`NonLinguisticTrainer`) and for mcse / macd ``"retrieval"``; for multitask and
        pixel-linguist ``"stages"`` (one entry per stage run: the same fields, its data and STS-B dev after it; the
        pixel model has no ``export``).
    """
    overrides = overrides or {}
    if tiny and "model" in overrides:
        raise ValueError("Pass either tiny=True (a locally built encoder) or a model override, not both.")
    config = load_recipe(recipe, tiny=tiny, overrides=overrides)
    if max_steps is not None:
        config = _cap_steps(config, max_steps)
    if isinstance(config, SentenceEncoderConfig):  # a sentence-transformers model keeps what is not set explicitly
        kept = [name for name in config.keep_model_modules if name not in overrides]
        config = config.replace("the overrides", keep_model_modules=kept)
    return run_method(config, data, output_dir, resume=resume, overwrite=overwrite, allow_changed=allow_changed)
