"""The trainer arguments every training run shares: dev evaluation, best-checkpoint selection, no duplicates."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal, Protocol

import torch
from sentence_transformers.base.sampler import BatchSamplers, MultiDatasetBatchSamplers

from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler
from sbert_nonling.training.training_args import NonLinguisticTrainingArguments

logger = logging.getLogger(__name__)

#: Every run's optimizer (each modality's too: UnpairedModalityTrainer builds them from the same setting): AdamW's
#: fused kernel, one operator per step and parameter group on a GPU and on a CPU alike (transformers' default from
#: torch 2.8, set here so that no other default changes the runs' numbers: foreach AdamW rounds differently).
FUSED_ADAMW = "adamw_torch_fused"
#: The model-selection metric: STS-B dev cosine Spearman, as logged by the dev evaluator.
SELECTION_METRIC = "eval_STSBenchmark_spearman_cosine"


class TrainerOptions(Protocol):
    """The trainer options every run of a method shares, as :func:`training_arguments` reads them (a method's config,
    e.g. :class:`~sbert_nonling.configs.SimCSEConfig`, has them all): ``seed``, ``precision`` (``auto``, ``fp32``,
    ``fp16`` or ``bf16``), ``dataloader_num_workers`` (a number or ``auto``), ``dataloader_pin_memory`` (a bool or
    ``auto``), ``lr_scheduler_type`` (transformers' name), ``eval_steps`` (evaluation and checkpoint interval),
    ``compile`` (compile the losses: a bool or ``auto``) and ``padding`` (``auto``, ``longest`` or ``max_length``)."""

    @property
    def seed(self) -> int: ...

    @property
    def precision(self) -> str: ...

    @property
    def dataloader_num_workers(self) -> int | Literal["auto"]: ...

    @property
    def dataloader_pin_memory(self) -> bool | Literal["auto"]: ...

    @property
    def lr_scheduler_type(self) -> str: ...

    @property
    def eval_steps(self) -> int: ...

    @property
    def compile(self) -> bool | Literal["auto"]: ...

    @property
    def padding(self) -> str: ...


class StageOptions(Protocol):
    """The optimizer settings of one training run, as :func:`training_arguments` reads them: a stage's of a
    multi-stage method (:class:`~sbert_nonling.configs.StageConfig`) or a single-run method's config
    (:class:`~sbert_nonling.configs.SingleRunConfig`): learning rate, batch size, epochs, max steps and warmup steps
    (steps, or a fraction of the training steps below 1)."""

    @property
    def learning_rate(self) -> float: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def epochs(self) -> int: ...

    @property
    def max_steps(self) -> int: ...

    @property
    def warmup_steps(self) -> float: ...


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 matmuls natively (oneDNN: AVX-512 or AMX). Without it (AVX2-only CPUs) bf16
    autocast falls back to an emulated kernel that is 20-250x slower than fp32 (measured on an AVX2 EPYC)."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def resolved_precision(precision: str) -> str:
    """``fp32``, ``fp16`` or ``bf16`` for a config's ``precision``: ``auto`` is bf16 on a GPU that computes it, fp16 on
    an older GPU, fp32 on a CPU; ``fp16`` without a GPU is a ValueError (accelerate would silently train in fp32).

    Args:
        precision: ``auto``, ``fp32``, ``fp16`` or ``bf16``.
    """
    if precision == "auto":
        if not torch.cuda.is_available():
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"
    if precision == "fp16" and not torch.cuda.is_available():
        raise ValueError(
            "precision='fp16' needs a CUDA GPU (loss-scaled fp16 autocast); on a CPU use 'fp32' or 'bf16'."
        )
    return precision


def resolved_workers(workers: int | str) -> int:
    """DataLoader workers for a config's ``dataloader_num_workers``: ``auto`` is 8 per GPU (at most the CPU cores per
    GPU; 0 with a single core), 0 on a CPU, where the training step and the data compete for the same cores.

    Args:
        workers: a number of worker processes, or ``auto``.
    """
    if workers != "auto":
        return int(workers)
    if not torch.cuda.is_available():
        return 0
    cores_per_gpu = (os.cpu_count() or 1) // max(torch.cuda.device_count(), 1)
    return min(8, cores_per_gpu) if cores_per_gpu > 1 else 0


def resolved_compile(compile_setting: bool | str) -> bool:
    """Whether the losses are compiled, for a config's ``compile``: ``auto`` is on when training on a CUDA GPU (where
    a compiled step launches far fewer kernels from Python) and off otherwise: on a CPU (or MPS) the first steps pay
    the compilation, about a minute per loss, and the committed CPU rows are eager. This is the one place ``auto`` is
    resolved: the trainer arguments hold the plain bool (``compile_loss``).

    Args:
        compile_setting: ``True``, ``False`` or ``auto``.

    Example::

        from sbert_nonling.training.arguments import resolved_compile

        print(resolved_compile(True), resolved_compile("auto"))  # True, and False on a machine without a CUDA GPU
    """
    if compile_setting == "auto":
        return torch.cuda.is_available()
    return bool(compile_setting)


def training_arguments(
    config: TrainerOptions,
    output_dir: str | Path,
    evaluating: bool,
    run: StageOptions,
    *,
    gradient_accumulation_steps: int = 1,
    interleaved: bool = False,
) -> NonLinguisticTrainingArguments:
    """The trainer arguments of one training run of ``config``'s method (dev evaluation, best checkpoint, no
    duplicates).

    ``config`` gives what every run of the method shares (:func:`resolved_precision`, :func:`resolved_workers`, seed,
    schedule, ``eval_steps``, :func:`resolved_compile` and ``padding``; AdamW is :data:`FUSED_ADAMW`), ``run`` the
    run's optimizer settings (a single-run method's config is its own ``run``). A compiled run has static shapes, as
    CUDA graphs (``compile_mode="reduce-overhead"``) need: text padded to ``max_seq_length`` (``padding`` ``auto``)
    and each dataset's short last batch of an epoch dropped (``dataloader_drop_last``; images, audio and caption
    features have one shape per front-end already). bf16 on a CPU without native bf16
    (:func:`cpu_has_native_bf16`) logs a warning: it is far slower than fp32 there.

    Args:
        config: the method's trainer options (:class:`TrainerOptions`; a method config has them).
        output_dir: the checkpoint folder.
        evaluating: whether a dev evaluator scores the run (evaluation every ``eval_steps``, best checkpoint kept).
        run: the run's learning rate, batch size per device, epochs, max steps (-1: none) and warmup
            (:class:`StageOptions`).
        gradient_accumulation_steps: batches per optimizer step.
        interleaved: MCSE's :class:`InterleavedBatchSampler` across the datasets (else proportional sampling).
    """
    precision = resolved_precision(config.precision)
    on_cpu = not torch.cuda.is_available()
    if precision == "bf16" and on_cpu and not cpu_has_native_bf16():
        logger.warning(
            "bf16 was asked for, but this CPU (%s) has no native bf16 matmul: autocast will run an emulated kernel "
            "that is much slower than fp32. Train without bf16 here.",
            torch.backends.cpu.get_cpu_capability(),
        )
    workers = resolved_workers(config.dataloader_num_workers)
    compiled = resolved_compile(config.compile)
    return NonLinguisticTrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=run.epochs,
        max_steps=run.max_steps,
        per_device_train_batch_size=run.batch_size,
        gradient_accumulation_steps=gradient_accumulation_steps,
        learning_rate=run.learning_rate,
        warmup_steps=run.warmup_steps,
        lr_scheduler_type=config.lr_scheduler_type,
        optim=FUSED_ADAMW,
        seed=config.seed,
        fp16=precision == "fp16",
        bf16=precision == "bf16",
        use_cpu=precision == "bf16" and on_cpu,  # transformers' condition for CPU bf16
        dataloader_num_workers=workers,
        dataloader_persistent_workers=workers > 0,
        dataloader_pin_memory=not on_cpu if config.dataloader_pin_memory == "auto" else config.dataloader_pin_memory,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        multi_dataset_batch_sampler=InterleavedBatchSampler if interleaved else MultiDatasetBatchSamplers.PROPORTIONAL,
        eval_strategy="steps" if evaluating else "no",
        eval_steps=config.eval_steps,
        save_steps=config.eval_steps,
        save_total_limit=2,
        load_best_model_at_end=evaluating,
        metric_for_best_model=SELECTION_METRIC if evaluating else None,
        greater_is_better=True,
        logging_steps=max(1, config.eval_steps // 5),
        dataloader_drop_last=compiled,  # a short last batch would be one more shape: another graph to build
        compile_loss=compiled,
        pad_to_max_length=config.padding == "max_length" or (config.padding == "auto" and compiled),
    )


def stage_arguments(
    config: TrainerOptions, run: str, stage: StageOptions, evaluating: bool, **options: Any
) -> NonLinguisticTrainingArguments:
    """The trainer arguments of one run of a multi-stage method's ``stage`` (:class:`StageOptions`: its learning rate,
    batch size, epochs, max steps and warmup steps), checkpoints in ``stages/<run>/checkpoints``.

    Args:
        config: the method's trainer options (:class:`TrainerOptions`).
        run: the stage run's name (its checkpoint folder).
        stage: the stage's optimizer settings (:class:`StageOptions`).
        evaluating: whether a dev evaluator scores the run.
        **options: further keyword arguments of :func:`training_arguments`.
    """
    return training_arguments(config, f"stages/{run}/checkpoints", evaluating, stage, **options)
