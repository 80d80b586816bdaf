"""The trainer arguments every recipe run shares: dev evaluation, best-checkpoint selection, no duplicates."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers, MultiDatasetBatchSamplers

from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler

logger = logging.getLogger(__name__)

#: The model-selection metric: STS-B dev cosine Spearman, as logged by the dev evaluator.
SELECTION_METRIC = "eval_STSBenchmark_spearman_cosine"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 matmuls natively (oneDNN: AVX-512 or AMX). Without it (AVX2-only CPUs) bf16
    autocast falls back to an emulated kernel that is 20-250x slower than fp32 (measured on an AVX2 EPYC)."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def training_arguments(
    settings: dict[str, Any], output_dir: Path, evaluating: bool, joint: bool, interleaved: bool
) -> SentenceTransformerTrainingArguments:
    """The recipe's hyper-parameters as trainer arguments: dev evaluation, best-checkpoint selection, no duplicates.

    ``settings["bf16"]`` (set by ``train_recipe(bf16=True)``) trains under bf16 autocast, on the CPU as on a GPU;
    otherwise the recipe's ``fp16`` applies on a GPU only. bf16 on a CPU without native bf16 (:func:`cpu_has_native_bf16`)
    is allowed but logged as a warning: it is far slower than fp32 there."""
    if settings.get("bf16") and not torch.cuda.is_available() and not cpu_has_native_bf16():
        logger.warning(
            "bf16 was asked for, but this CPU (%s) has no native bf16 matmul: autocast will run an emulated kernel that is "
            "much slower than fp32. Train without bf16 here.", torch.backends.cpu.get_cpu_capability(),
        )
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir / "checkpoints"),
        num_train_epochs=settings["epochs"],
        max_steps=settings["max_steps"],
        per_device_train_batch_size=settings["batch_size"],
        gradient_accumulation_steps=2 if joint else settings.get("gradient_accumulation_steps", 1),
        learning_rate=settings["learning_rate"],
        warmup_steps=settings.get("warmup_steps", settings.get("warmup_fraction", 0.0)),
        lr_scheduler_type=settings["lr_scheduler_type"],
        seed=settings["seed"],
        fp16=bool(settings["fp16"]) and torch.cuda.is_available() and not settings.get("bf16"),
        bf16=bool(settings.get("bf16")),
        use_cpu=bool(settings.get("bf16")) and not torch.cuda.is_available(),  # transformers' condition for CPU bf16
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        multi_dataset_batch_sampler=InterleavedBatchSampler if interleaved else MultiDatasetBatchSamplers.PROPORTIONAL,
        eval_strategy="steps" if evaluating else "no",
        eval_steps=settings["eval_steps"],
        save_strategy="steps",
        save_steps=settings["eval_steps"],
        save_total_limit=2,
        load_best_model_at_end=evaluating,
        metric_for_best_model=SELECTION_METRIC if evaluating else None,
        greater_is_better=True,
        logging_steps=max(1, settings["eval_steps"] // 5),
        report_to="none",
    )


def dev_curve(log_history: list[dict[str, Any]]) -> list[list[float]]:
    """``[[step, STS-B dev x100], ...]`` of the evaluations logged during training (``trainer.state.log_history``)."""
    return [[entry["step"], 100.0 * entry[SELECTION_METRIC]] for entry in log_history if SELECTION_METRIC in entry]
