"""The trainer arguments every training run shares: dev evaluation, best-checkpoint selection, no duplicates."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers, MultiDatasetBatchSamplers

from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler

logger = logging.getLogger(__name__)

#: The model-selection metric: STS-B dev cosine Spearman, as logged by the dev evaluator.
SELECTION_METRIC = "eval_STSBenchmark_spearman_cosine"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 matmuls natively (oneDNN: AVX-512 or AMX). Without it (AVX2-only CPUs) bf16
    autocast falls back to an emulated kernel that is 20-250x slower than fp32 (measured on an AVX2 EPYC)."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def training_arguments(
    config: MethodConfig,
    output_dir: str | Path,
    evaluating: bool,
    *,
    learning_rate: float,
    batch_size: int,
    epochs: int = 1,
    max_steps: int = -1,
    warmup: float = 0,
    gradient_accumulation_steps: int = 1,
    interleaved: bool = False,
) -> SentenceTransformerTrainingArguments:
    """The trainer arguments of one training run of ``config``'s method: dev evaluation, best-checkpoint selection,
    no duplicates.

    ``config`` gives what every run of the method shares (``seed``, ``fp16`` / ``bf16``, ``lr_scheduler_type``,
    ``eval_steps``); the keyword arguments the run's own optimizer settings (a multi-stage method has one set per
    stage). ``output_dir`` is the checkpoint folder (relative paths are relative to the working directory, or to the
    run folder under :func:`~sbert_nonling.training.runner.run_method`). ``warmup`` is a step count, or a fraction of
    the training steps when below 1. ``interleaved`` mixes a text and a caption dataset as MCSE does
    (:class:`InterleavedBatchSampler`).

    ``config.bf16`` trains under bf16 autocast, on the CPU as on a GPU; otherwise ``config.fp16`` applies on a GPU
    only. bf16 on a CPU without native bf16 (:func:`cpu_has_native_bf16`) is allowed but logged as a warning: it is
    far slower than fp32 there."""
    if config.bf16 and not torch.cuda.is_available() and not cpu_has_native_bf16():
        logger.warning(
            "bf16 was asked for, but this CPU (%s) has no native bf16 matmul: autocast will run an emulated kernel that is "
            "much slower than fp32. Train without bf16 here.", torch.backends.cpu.get_cpu_capability(),
        )
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=epochs,
        max_steps=max_steps,
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=gradient_accumulation_steps,
        learning_rate=learning_rate,
        warmup_steps=warmup,
        lr_scheduler_type=config.lr_scheduler_type,
        seed=config.seed,
        fp16=config.fp16 and torch.cuda.is_available() and not config.bf16,
        bf16=config.bf16,
        use_cpu=config.bf16 and not torch.cuda.is_available(),  # transformers' condition for CPU bf16
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        multi_dataset_batch_sampler=InterleavedBatchSampler if interleaved else MultiDatasetBatchSamplers.PROPORTIONAL,
        eval_strategy="steps" if evaluating else "no",
        eval_steps=config.eval_steps,
        save_strategy="steps",
        save_steps=config.eval_steps,
        save_total_limit=2,
        load_best_model_at_end=evaluating,
        metric_for_best_model=SELECTION_METRIC if evaluating else None,
        greater_is_better=True,
        logging_steps=max(1, config.eval_steps // 5),
        report_to="none",
    )


def dev_curve(log_history: list[dict[str, Any]]) -> list[list[float]]:
    """``[[step, STS-B dev x100], ...]`` of the evaluations logged during training (``trainer.state.log_history``)."""
    return [[entry["step"], 100.0 * entry[SELECTION_METRIC]] for entry in log_history if SELECTION_METRIC in entry]
