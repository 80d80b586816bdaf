"""Run a recipe end to end: the recipe's typed config, its method's builder, the runner (dev scores, training with
best-checkpoint selection, save, export, run record)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from sbert_nonling.app.recipes import load_recipe
from sbert_nonling.app.run_record import training_data_lines
from sbert_nonling.app.runner import run_method
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.configs.grounding import GroundingConfig
from sbert_nonling.configs.multitask import MultitaskConfig
from sbert_nonling.configs.pixel_linguist import PixelLinguistConfig
from sbert_nonling.configs.simcse import SimCSEConfig
from sbert_nonling.configs.unpaired_modality import UnpairedModalityConfig
from sbert_nonling.methods.grounding import build_grounding
from sbert_nonling.methods.multitask import build_multitask
from sbert_nonling.methods.pixel_linguist import build_pixel_linguist
from sbert_nonling.methods.sentence_encoder import MODEL_OWN_SETTINGS
from sbert_nonling.methods.simcse import build_simcse
from sbert_nonling.methods.unpaired_modality import build_unpaired_modality


def _cap_steps(config: MethodConfig, max_steps: int) -> MethodConfig:
    """``config`` with training stopped after ``max_steps`` optimizer steps: of the run, or of each stage run
    (a stage set to 0 steps stays skipped)."""
    source = "the max_steps option"
    if isinstance(config, PixelLinguistConfig):
        return config.replace(
            source,
            visual_max_steps=min(config.visual_max_steps, max_steps),
            topical_max_steps=min(config.topical_max_steps, max_steps),
            reasoning_max_steps=min(config.reasoning_max_steps, max_steps),
            parallel_max_steps=min(config.parallel_max_steps, max_steps),
        )
    if isinstance(config, MultitaskConfig):
        return config.replace(
            source,
            contrastive_max_steps=max_steps if config.contrastive_max_steps < 0 else min(config.contrastive_max_steps, max_steps),
            multitask_max_steps=max_steps if config.multitask_max_steps < 0 else min(config.multitask_max_steps, max_steps),
        )
    return config.replace(source, max_steps=max_steps)


def train_recipe(
    recipe: str,
    output_dir: str | Path,
    text_file: str | Path | None = None,
    nli_file: str | Path | None = None,
    sts_dir: str | Path | None = None,
    image_dir: str | Path | None = None,
    audio_dir: str | Path | None = None,
    audio_label_regex: str | None = None,
    captions_file: str | Path | None = None,
    image_features: str | Path | None = None,
    heldout_images_file: str | Path | None = None,
    stsb_multi_dir: str | Path | None = None,
    model: str | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    overrides: dict[str, Any] | None = None,
    resume: bool = False,
    precision: str | None = None,
    overwrite: bool = False,
    allow_changed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Train ``recipe`` and leave ``output_dir/model`` (full model), ``output_dir/export`` (plain text checkpoint),
    each with a model card, ``output_dir/checkpoints`` (trainer checkpoints; ``stages/<run>/checkpoints`` for multitask
    and pixel-linguist), ``output_dir/recipe.json`` (the settings
    used) and ``output_dir/results.json`` (the returned result).

    With ``sts_dir`` the dev tasks found there (STS-B dev, SICK trial) are scored before and after training, STS-B dev
    is evaluated every ``eval_steps`` steps and the best checkpoint on it is kept (``load_best_model_at_end``).
    The recipe is loaded into its method's typed config (:func:`load_recipe`), the method's builder
    (:mod:`sbert_nonling.methods`: :func:`build_simcse`, :func:`build_unpaired_modality` for visualcse / audiocse,
    :func:`build_grounding` for mcse / macd, :func:`build_multitask`, :func:`build_pixel_linguist`) turns it and the
    data into a plan, and :func:`~sbert_nonling.app.runner.run_method` runs it.

    Args:
        recipe: a name from :func:`~sbert_nonling.app.recipes.list_recipes`.
        output_dir: run folder.
        text_file: one sentence per line (recipes with ``"data": "text"``).
        nli_file: SimCSE-format NLI triplets CSV (recipes with ``"data": "nli"``).
        sts_dir: SentEval-layout STS folder for dev evaluation and model selection.
        image_dir: images in one sub-folder per class (image recipes).
        audio_dir, audio_label_regex: audio files and the pattern whose first group of the file name is the class.
        captions_file: image-caption pairs (Flickr token file, CSV or JSONL) for grounding recipes (mcse, macd), whose
            images are in ``image_dir``.
        image_features: precomputed features of those images (``sbert-nonling features``); default: extracted now.

    Every data argument (``text_file``, ``nli_file``, ``image_dir``, ``audio_dir``, ``captions_file``) may instead name
    a Hugging Face dataset, ``"owner/name?split=...&config=...&ROLE=COLUMN"`` (:mod:`sbert_nonling.data.hub`; see
    docs/data.md for the Hub datasets that match each paper's data). A Hub image-caption dataset brings its images:
    no ``image_dir``. A Hub audio dataset labels clips by its label column: no ``audio_label_regex``.
        heldout_images_file: image names, one per line (e.g. Flickr_8k.testImages.txt), kept out of training; their
            caption <-> image Recall@1/5 after training is returned under ``"retrieval"`` (as MCSE reports).
        stsb_multi_dir: stsb_multi_mt files (pixel-linguist: multilingual STS-B dev scores and, with leapfrogging,
            parallel training pairs from the ``train`` files).
        model: Hub name or folder of the starting encoder; default: the recipe's (bert-base-uncased). A
            sentence-transformers model (all-MiniLM-L6-v2, all-mpnet-base-v2, bge-*, e5-*, gte-*, a decoder
            embedder) is continued with its own Pooling, Dense, Normalize, prompts and ``max_seq_length`` (the
            recipe's ``pooling`` / ``max_seq_length`` apply only when overridden explicitly, e.g.
            ``overrides={"pooling": "mean", "max_seq_length": 32}``; logged); see
            :func:`~sbert_nonling.models.sentence_model.build_sentence_model`.
        tiny: start from a small random encoder built offline from the training text (see ``build_tiny_encoder``)
            and use the recipe's ``tiny`` hyper-parameters.
        max_steps: stop after this many optimizer steps (overrides the recipe; pixel-linguist: per stage run).
        overrides: other recipe settings to override, e.g. ``{"learning_rate": 1e-5}``.
        resume: continue an interrupted run in the same ``output_dir`` from its newest intact checkpoint (model,
            per-modality optimizers and schedules, loss heads, data position, RNG states); the result is the run
            an uninterrupted call would have given. Not for pixel-linguist and multitask, whose stages restart.
            A folder with no complete checkpoint, or with a finished run, is refused with a ValueError.
        allow_changed: settings a resume may change although the run was started with other values (only safe ones,
            :data:`~sbert_nonling.training.run_settings.SAFE_TO_CHANGE`, e.g. ``eval_steps``); any other difference
            from the settings recorded in the checkpoint is refused with a ValueError listing them. Accepted changes are
            recorded (``"settings_changed_on_resume"`` in the result).
        overwrite: replace the finished (or interrupted) run ``output_dir`` may hold; without it such a folder is
            refused with a ValueError before anything is written (:func:`prepare_output_dir`).
        precision: ``auto``, ``fp32``, ``fp16`` or ``bf16`` instead of the config's ``precision`` (``auto``: bf16 on a
            GPU with bf16, fp16 with loss scaling on an older GPU, fp32 on a CPU; the run logs and records which).
            bf16 on a CPU with native bf16 matmul (AVX-512 BF16 / AMX) is ~2.8x faster than fp32; on other CPUs
            (AVX2) emulated and 30x slower or worse, which is logged as a warning (docs/benchmarks.md, item 4).

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
    config = load_recipe(recipe, tiny=tiny, overrides=overrides)
    if precision is not None:
        config = config.replace(source="the precision option", precision=precision)
    if max_steps is not None:
        config = _cap_steps(config, max_steps)
    # A sentence-transformers model keeps its own Pooling / Dense / Normalize and length unless set explicitly.
    keep_model_modules = [name for name in MODEL_OWN_SETTINGS if name not in (overrides or {})]
    if isinstance(config, PixelLinguistConfig):
        build = partial(build_pixel_linguist, config, text_file, nli_file, stsb_multi_dir, sts_dir, model)
        data = training_data_lines(text_file=text_file, nli_file=nli_file, stsb_multi_dir=stsb_multi_dir if config.leapfrog_iterations else None)
    elif isinstance(config, MultitaskConfig):
        build = partial(build_multitask, config, nli_file, text_file, sts_dir, sts_dir, model)
        data = training_data_lines(text_file=text_file, nli_file=nli_file, task_dir=sts_dir if config.multitask_max_steps != 0 else None)
    else:
        if isinstance(config, GroundingConfig):
            build = partial(
                build_grounding,
                config,
                captions_file,
                image_dir,
                image_features,
                heldout_images_file,
                text_file,
                nli_file,
                sts_dir,
                model,
                keep_model_modules,
            )
        elif isinstance(config, UnpairedModalityConfig):
            build = partial(
                build_unpaired_modality,
                config,
                text_file,
                image_dir,
                audio_dir,
                audio_label_regex,
                sts_dir,
                model,
                keep_model_modules,
                nli_file,
            )
        else:
            assert isinstance(config, SimCSEConfig)  # the one other class of METHOD_CONFIGS
            build = partial(build_simcse, config, text_file, nli_file, sts_dir, model, keep_model_modules)
        data = training_data_lines(
            text_file=text_file,
            nli_file=nli_file,
            image_dir=image_dir,
            audio_dir=audio_dir,
            captions_file=captions_file,
            image_features=image_features,
        )
    return run_method(config, build, output_dir, sts_dir, stsb_multi_dir, data, resume=resume, overwrite=overwrite, allow_changed=allow_changed)
