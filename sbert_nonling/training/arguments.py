"""The trainer arguments every recipe run shares: dev evaluation, best-checkpoint selection, no duplicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers, MultiDatasetBatchSamplers

from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler

#: The model-selection metric: STS-B dev cosine Spearman, as logged by the dev evaluator.
SELECTION_METRIC = "eval_STSBenchmark_spearman_cosine"


def training_arguments(
    settings: dict[str, Any], output_dir: Path, evaluating: bool, joint: bool, interleaved: bool
) -> SentenceTransformerTrainingArguments:
    """The recipe's hyper-parameters as trainer arguments: dev evaluation, best-checkpoint selection, no duplicates."""
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
        fp16=bool(settings["fp16"]) and torch.cuda.is_available(),
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
