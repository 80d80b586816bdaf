"""Multi-task contrastive training: contrastive pre-training, then task heads trained with a multi-task scheme."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.sampler import BatchSamplers
from torch import nn
from transformers import set_seed

from sbert_nonling.data.tasks import (
    SICK_LABELS,
    pair_classification_dataset,
    read_sick_entailment,
    read_stsb_genres,
    sentence_classification_dataset,
    sts_regression_dataset,
)
from sbert_nonling.data.text import (
    nli_triplets_dataset,
    read_nli_triplets,
    read_sentences,
    sentence_pairs_dataset,
)
from sbert_nonling.evaluation.sts import evaluate_sts_dir, sts_dev_evaluator
from sbert_nonling.evaluation.sts_data import read_sick, read_stsb_csv
from sbert_nonling.export.text_model import export_text_model
from sbert_nonling.losses.head_layer import HeadLayer
from sbert_nonling.losses.pair_classification import PairClassificationLoss
from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.sts_regression import STSRegressionLoss
from sbert_nonling.models.sentence_model import build_sentence_model
from sbert_nonling.models.tiny_encoder import build_tiny_encoder
from sbert_nonling.modules.shared_encoder import SharedEncoder
from sbert_nonling.training.arguments import training_arguments
from sbert_nonling.training.multitask_sampler import (
    MULTITASK_SCHEMES,
    multitask_sampler_arguments,
)
from sbert_nonling.training.output_folder import prepare_output_dir
from sbert_nonling.training.preemption import TrainingPreempted
from sbert_nonling.training.run_record import training_data_lines, write_run_record
from sbert_nonling.training.trainer import NonLinguisticTrainer

logger = logging.getLogger(__name__)

#: Task name -> what it trains on (files under the task folder, SentEval's layout) and its head.
TASKS: dict[str, str] = {
    "classification": "STS-B train sentences -> genre (STSBenchmark/sts-train.csv), SentenceClassificationLoss",
    "pair_classification": "SICK train entailment labels (SICK/SICK_train.txt), PairClassificationLoss",
    "sts": "STS-B train scores and/or SICK train relatedness, STSRegressionLoss",
    "contrastive": "the contrastive stage's data again, SimCSELoss (optional fourth task)",
}
STS_SOURCES: tuple[str, ...] = ("stsb", "sick")
STAGES: tuple[str, ...] = ("contrastive", "multitask")


def _stage_settings(settings: dict[str, Any], stage: str) -> dict[str, Any]:
    """The trainer settings of ``stage`` from its ``<stage>_learning_rate`` / ``_batch_size`` / ``_epochs`` /
    ``_max_steps`` / ``_warmup_steps`` keys."""
    stage_settings = dict(settings)
    for key in ("learning_rate", "batch_size", "epochs", "max_steps", "warmup_steps"):
        stage_settings[key] = settings[f"{stage}_{key}"]
    return stage_settings


def _stage_runs(settings: dict[str, Any], stage: str) -> bool:
    return settings[f"{stage}_max_steps"] > 0 or (settings[f"{stage}_max_steps"] < 0 and settings[f"{stage}_epochs"] > 0)


def _check_settings(settings: dict[str, Any]) -> None:
    if settings["scheme"] not in MULTITASK_SCHEMES:
        raise ValueError(f"scheme={settings['scheme']!r} must be one of {list(MULTITASK_SCHEMES)}.")
    unknown = [task for task in settings["tasks"] if task not in TASKS]
    if unknown or not settings["tasks"]:
        raise ValueError(f"tasks={settings['tasks']!r}: choose one or more of {list(TASKS)}.")
    bad_sources = [source for source in settings["sts_sources"] if source not in STS_SOURCES]
    if bad_sources or ("sts" in settings["tasks"] and not settings["sts_sources"]):
        raise ValueError(f"sts_sources={settings['sts_sources']!r}: choose one or more of {list(STS_SOURCES)}.")


def _subsample(items: Sequence[Any], limit: int | None, seed: int) -> list[Any]:
    """``limit`` items drawn at random (seeded), in file order; all items if ``limit`` is None. Release files are
    sorted (STS-B by genre), so the first lines would not be a sample."""
    if limit is None or limit >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[index] for index in keep]


def _contrastive_dataset(text_file, nli_file, limit: int | None, seed: int) -> tuple[DatasetDict | Dataset | None, list[str]]:
    """NLI triplets (supervised positives, contradictions as explicit negatives) and/or (s, s) pairs of a text file."""
    parts, sentences = {}, []
    if nli_file is not None:
        triplets = _subsample(read_nli_triplets(nli_file), limit, seed)
        parts["nli"] = nli_triplets_dataset(triplets)
        sentences += [sentence for triplet in triplets for sentence in triplet]
    if text_file is not None:
        lines = _subsample(read_sentences(text_file), limit, seed)
        parts["text"] = sentence_pairs_dataset(lines)
        sentences += lines
    if not parts:
        return None, sentences
    return (next(iter(parts.values())) if len(parts) == 1 else DatasetDict(parts)), sentences


def _task_datasets(settings: dict[str, Any], task_dir: Path) -> tuple[dict[str, Dataset], dict[str, tuple[str, ...]], list[str]]:
    """The supervised task datasets from ``task_dir`` (SentEval layout), their label names and all their sentences."""
    limit, seed = settings["train_limit"], settings["seed"]
    stsb_train, sick_train = task_dir / "STSBenchmark" / "sts-train.csv", task_dir / "SICK" / "SICK_train.txt"
    needed = {"classification": [stsb_train], "pair_classification": [sick_train]}
    needed["sts"] = [stsb_train if source == "stsb" else sick_train for source in settings["sts_sources"]]
    for task in settings["tasks"]:
        for path in needed.get(task, []):
            if not path.is_file():
                raise ValueError(
                    f"The {task} task trains on {path}, which does not exist; pass a task_dir (or sts_dir) holding "
                    "SentEval's STSBenchmark/sts-train.csv and SICK/SICK_train.txt."
                )
    datasets, labels, sentences = {}, {}, []
    if "classification" in settings["tasks"]:
        genres = _subsample(read_stsb_genres(stsb_train), limit, seed)
        datasets["classification"], labels["classification"] = sentence_classification_dataset(genres)
        sentences += [sentence for sentence, _ in genres]
    if "pair_classification" in settings["tasks"]:
        pairs = _subsample(read_sick_entailment(sick_train), limit, seed)
        datasets["pair_classification"], labels["pair_classification"] = pair_classification_dataset(pairs, SICK_LABELS)
        sentences += [sentence for pair in pairs for sentence in pair[:2]]
    if "sts" in settings["tasks"]:
        parts = []
        for source in settings["sts_sources"]:
            data = read_stsb_csv(stsb_train) if source == "stsb" else read_sick(sick_train)
            score_range = (0.0, 5.0) if source == "stsb" else (1.0, 5.0)
            rows = _subsample(list(zip(data.sentences1, data.sentences2, data.scores)), limit, seed)
            sentences1, sentences2, scores = (list(column) for column in zip(*rows))
            parts.append(sts_regression_dataset(sentences1, sentences2, scores, score_range))
            sentences += sentences1 + sentences2
        datasets["sts"] = parts[0] if len(parts) == 1 else Dataset.from_dict(
            {column: [value for part in parts for value in part[column]] for column in ("sentence1", "sentence2", "score")}
        )
    return datasets, labels, sentences


def task_losses(
    model: SentenceTransformer,
    tasks: list[str],
    num_labels: dict[str, int],
    hidden_dimension: int = 768,
    dropout: float = 0.3,
    share_head_layer: bool = True,
    pair_head: str = "bilinear",
    contrastive_loss: nn.Module | None = None,
) -> dict[str, nn.Module]:
    """One training-only head loss per task; with ``share_head_layer`` the pair classification and STS losses use
    one :class:`HeadLayer` object (the paper shares the first head layer between its paraphrase and STS heads)."""
    shared = HeadLayer(model.get_embedding_dimension(), hidden_dimension, dropout) if share_head_layer else None
    losses: dict[str, nn.Module] = {}
    for task in tasks:
        if task == "classification":
            losses[task] = SentenceClassificationLoss(model, num_labels[task], hidden_dimension, dropout)
        elif task == "pair_classification":
            losses[task] = PairClassificationLoss(model, num_labels[task], pair_head, hidden_dimension, dropout, head_layer=shared)
        elif task == "sts":
            losses[task] = STSRegressionLoss(model, hidden_dimension, dropout, head_layer=shared)
        elif task == "contrastive":
            if contrastive_loss is None:
                raise ValueError("The contrastive task needs the contrastive loss (and data: nli_file or text_file).")
            losses[task] = contrastive_loss
        else:
            raise ValueError(f"Unknown task {task!r}; tasks: {list(TASKS)}.")
    return losses


def _train_stage(
    model: SentenceTransformer,
    train_dataset: Dataset | DatasetDict,
    loss: nn.Module | dict[str, nn.Module],
    settings: dict[str, Any],
    stage: str,
    output_dir: Path,
    sts_dir: str | Path | None,
    sampler_arguments: dict[str, Any] | None = None,
    batch_sampler: BatchSamplers = BatchSamplers.NO_DUPLICATES,
) -> dict[str, Any]:
    """One run (best checkpoint on STS-B dev when ``sts_dir`` is given); returns its log entry."""
    stage_settings = _stage_settings(settings, stage)
    if sampler_arguments:
        stage_settings["gradient_accumulation_steps"] = sampler_arguments["gradient_accumulation_steps"]
    set_seed(settings["seed"])
    evaluating = sts_dir is not None
    args = training_arguments(stage_settings, output_dir / "stages" / stage, evaluating, joint=False, interleaved=False)
    args.batch_sampler = batch_sampler
    if sampler_arguments:
        args.multi_dataset_batch_sampler = sampler_arguments["multi_dataset_batch_sampler"]
    trainer = NonLinguisticTrainer(
        model=model, args=args, train_dataset=train_dataset, loss=loss, evaluator=sts_dev_evaluator(sts_dir) if evaluating else None
    )
    try:
        trainer.train()
    except TrainingPreempted as stop:  # the stage's checkpoint is complete, but the recipe restarts as a whole
        raise TrainingPreempted(stop.signal_number, stop.checkpoint, resumable=False) from None
    entry = {
        "stage": stage,
        "examples": {name: len(part) for name, part in train_dataset.items()} if isinstance(train_dataset, DatasetDict) else len(train_dataset),
        "global_step": trainer.state.global_step,
        "best_checkpoint": trainer.state.best_model_checkpoint,
    }
    if evaluating:
        entry["dev"] = evaluate_sts_dir(model, sts_dir, "dev")
    return entry


def train_multitask(
    settings: dict[str, Any],
    output_dir: str | Path,
    text_file: str | Path | None = None,
    nli_file: str | Path | None = None,
    sts_dir: str | Path | None = None,
    model: str | None = None,
    task_dir: str | Path | None = None,
    max_steps: int | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Run the ``multitask`` recipe (seed "Contrastive Learning for Generalizable Sentence Embeddings").

    1. Contrastive pre-training (skipped if ``contrastive_max_steps`` is 0): :class:`SimCSELoss` (tau
       ``temperature``) on NLI triplets of ``nli_file`` — supervised positives (entailment) and explicit negatives
       (contradiction) — and/or unsupervised ``(s, s)`` pairs of ``text_file``.
    2. Multi-task fine-tuning with training-only task heads, the ``tasks`` of the recipe:
       ``classification`` (STS-B train sentence -> genre, :class:`SentenceClassificationLoss`),
       ``pair_classification`` (SICK train entailment, :class:`PairClassificationLoss`, bilinear head),
       ``sts`` (STS-B train / SICK relatedness, :class:`STSRegressionLoss`), optionally ``contrastive`` (stage 1's
       loss and data as a fourth task). With ``share_head_layer`` the pair classification and STS heads share their
       first layer. ``scheme`` selects how tasks are mixed: ``average`` (one batch of every task per optimizer step,
       losses averaged), ``round_robin`` or ``proportional`` (sentence-transformers' samplers).

    The heads are loss parameters: optimised and checkpointed (:class:`NonLinguisticTrainer`), never saved in the
    model. With ``sts_dir`` every stage keeps its best checkpoint on STS-B dev (the only selection signal); STS-B dev
    and SICK trial are scored before, after each stage and at the end. The task files are read from ``task_dir``
    (default: ``sts_dir``) in SentEval's layout: ``STSBenchmark/sts-train.csv``, ``SICK/SICK_train.txt``.

    Args:
        settings: the recipe, from ``get_recipe("multitask", tiny=..., overrides=...)``.
        output_dir: run folder (``model`` and ``export``, each with a model card, ``stages/<stage>/checkpoints``,
            ``recipe.json``, ``results.json``).
        text_file, nli_file: contrastive data (at least one when the contrastive stage runs).
        sts_dir: SentEval-layout STS folder for dev evaluation and model selection.
        model: Hub name or folder of the starting encoder; default: the recipe's.
        task_dir: folder holding the task training files; default ``sts_dir``.
        max_steps: cap on the optimizer steps of each stage.
        overwrite: replace a run ``output_dir`` already holds (refused otherwise, :func:`prepare_output_dir`).

    Returns:
        ``{"recipe", "model", "export", "dev_before", "dev_after", "stages", "global_step", "best_checkpoint"}``.
    """
    _check_settings(settings)
    if settings["tiny"] and model is not None:
        raise ValueError("Pass either tiny=True (a locally built encoder) or model=..., not both.")
    settings = dict(settings)
    if max_steps is not None:
        for stage in STAGES:
            current = settings[f"{stage}_max_steps"]
            settings[f"{stage}_max_steps"] = max_steps if current < 0 else min(current, max_steps)
    output_dir = prepare_output_dir(output_dir, overwrite=overwrite, resumable=False)
    task_dir = task_dir if task_dir is not None else sts_dir
    if task_dir is None:
        raise ValueError(
            "The multitask recipe trains on SICK and STS-B train files: pass sts_dir (or task_dir) holding "
            "STSBenchmark/sts-train.csv and SICK/SICK_train.txt."
        )
    set_seed(settings["seed"])
    contrastive_data, sentences = _contrastive_dataset(text_file, nli_file, settings["train_limit"], settings["seed"])
    needs_contrastive = _stage_runs(settings, "contrastive") or "contrastive" in settings["tasks"]
    if needs_contrastive and contrastive_data is None:
        raise ValueError("The contrastive stage trains on NLI triplets or sentences: pass nli_file (sent0,sent1,hard_neg CSV) or text_file.")
    datasets, labels, task_sentences = _task_datasets(settings, Path(task_dir)) if _stage_runs(settings, "multitask") else ({}, {}, [])
    if settings["tiny"]:
        encoder_path = str(build_tiny_encoder(output_dir / "tiny-encoder", sentences + task_sentences, seed=settings["seed"], **settings["tiny_encoder"]))
    else:
        encoder_path = model or settings["model"]
    encoder = SharedEncoder(encoder_path, max_seq_length=settings["max_seq_length"])
    sentence_model = build_sentence_model(encoder, pooling=settings["pooling"], max_seq_length=None)
    dev_before = evaluate_sts_dir(sentence_model, sts_dir, "dev") if sts_dir else {}

    contrastive_loss = None
    if contrastive_data is not None:
        contrastive_loss = SimCSELoss(sentence_model, temperature=settings["temperature"], training_head=settings["training_head"])
    stages = []
    if _stage_runs(settings, "contrastive"):
        loss = contrastive_loss if not isinstance(contrastive_data, DatasetDict) else dict.fromkeys(contrastive_data, contrastive_loss)
        stages.append(_train_stage(sentence_model, contrastive_data, loss, settings, "contrastive", output_dir, sts_dir))
    if _stage_runs(settings, "multitask"):
        if "contrastive" in settings["tasks"]:
            datasets["contrastive"] = contrastive_data["nli"] if isinstance(contrastive_data, DatasetDict) else contrastive_data
        losses = task_losses(
            sentence_model,
            list(settings["tasks"]),
            {task: len(names) for task, names in labels.items()},
            hidden_dimension=settings["head_hidden_dimension"],
            dropout=settings["head_dropout"],
            share_head_layer=settings["share_head_layer"],
            pair_head=settings["pair_head"],
            contrastive_loss=contrastive_loss,
        )
        stages.append(
            _train_stage(
                sentence_model,
                DatasetDict({task: datasets[task] for task in settings["tasks"]}),
                losses,
                settings,
                "multitask",
                output_dir,
                sts_dir,
                sampler_arguments=multitask_sampler_arguments(settings["scheme"], len(settings["tasks"])),
                batch_sampler=BatchSamplers.BATCH_SAMPLER,
            )
        )
        stages[-1]["labels"] = {task: list(names) for task, names in labels.items()}

    sentence_model.save(str(output_dir / "model"))
    export_text_model(sentence_model, output_dir / "export")
    result = {
        "recipe": settings["name"],
        "model": str(output_dir / "model"),
        "export": str(output_dir / "export"),
        "dev_before": dev_before,
        "dev_after": evaluate_sts_dir(sentence_model, sts_dir, "dev") if sts_dir else {},
        "stages": stages,
        "global_step": sum(entry["global_step"] for entry in stages),
        "best_checkpoint": stages[-1]["best_checkpoint"] if stages else None,
    }
    data = training_data_lines(text_file=text_file, nli_file=nli_file, task_dir=task_dir if _stage_runs(settings, "multitask") else None)
    write_run_record(output_dir, settings, result, {"model": "full", "export": "text"}, data)
    return result
