"""Multi-task contrastive training as a plan: contrastive pre-training, then training-only task heads trained with a
multi-task scheme (seed: "Contrastive Learning for Generalizable Sentence Embeddings", Stanford CS224N)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict, concatenate_datasets
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.sampler import BatchSamplers
from torch import nn

from sbert_nonling.configs.multitask import MultitaskConfig
from sbert_nonling.data.sources import DataSources
from sbert_nonling.data.tasks import (
    SICK_LABELS,
    pair_classification_dataset,
    read_sick_entailment,
    read_stsb_genres,
    sentence_classification_dataset,
    sts_regression_dataset,
)
from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.evaluation.sts_data import read_sick, read_stsb_csv
from sbert_nonling.losses.head_layer import HeadLayer
from sbert_nonling.losses.pair_classification import PairClassificationLoss
from sbert_nonling.losses.sentence_classification import SentenceClassificationLoss
from sbert_nonling.losses.sts_regression import STSRegressionLoss
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, TrainingStage
from sbert_nonling.methods.sentence_encoder import starting_sentence_model, text_contrastive_loss
from sbert_nonling.training.arguments import stage_arguments
from sbert_nonling.training.multitask_sampler import multitask_sampler_arguments
from sbert_nonling.util.choices import PairHead
from sbert_nonling.util.heads import embedding_dimension

#: Task name -> what it trains on (files under the task folder, SentEval's layout) and its head.
TASKS: dict[str, str] = {
    "classification": "STS-B train sentences -> genre (STSBenchmark/sts-train.csv), SentenceClassificationLoss",
    "pair_classification": "SICK train entailment labels (SICK/SICK_train.txt), PairClassificationLoss",
    "sts": "STS-B train scores and/or SICK train relatedness, STSRegressionLoss",
    "contrastive": "the contrastive stage's data again, SimCSELoss (optional fourth task)",
}
STS_SOURCES: tuple[str, ...] = ("stsb", "sick")


def _check_tasks(config: MultitaskConfig) -> None:
    unknown = [task for task in config.tasks if task not in TASKS]
    if unknown or not config.tasks:
        raise ValueError(f"tasks={config.tasks!r}: choose one or more of {list(TASKS)}.")
    bad_sources = [source for source in config.sts_sources if source not in STS_SOURCES]
    if bad_sources or ("sts" in config.tasks and not config.sts_sources):
        raise ValueError(f"sts_sources={config.sts_sources!r}: choose one or more of {list(STS_SOURCES)}.")


def _subsample(items: Sequence[Any], limit: int | None, seed: int) -> list[Any]:
    """``limit`` items drawn at random (seeded), in file order; all items if ``limit`` is None. Release files are
    sorted (STS-B by genre), so the first lines would not be a sample."""
    if limit is None or limit >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[index] for index in keep]


def _contrastive_dataset(
    text_file, nli_file, limit: int | None, seed: int
) -> tuple[DatasetDict | Dataset | None, list[str]]:
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


def _task_datasets(
    config: MultitaskConfig, task_dir: Path
) -> tuple[dict[str, Dataset], dict[str, tuple[str, ...]], list[str]]:
    """The supervised task datasets from ``task_dir`` (SentEval layout), their label names and all their sentences."""
    limit, seed = config.train_limit, config.seed
    stsb_train, sick_train = task_dir / "STSBenchmark" / "sts-train.csv", task_dir / "SICK" / "SICK_train.txt"
    needed = {"classification": [stsb_train], "pair_classification": [sick_train]}
    needed["sts"] = [stsb_train if source == "stsb" else sick_train for source in config.sts_sources]
    for task in config.tasks:
        for path in needed.get(task, []):
            if not path.is_file():
                raise ValueError(
                    f"The {task} task trains on {path}, which does not exist; pass an sts_dir holding "
                    "SentEval's STSBenchmark/sts-train.csv and SICK/SICK_train.txt."
                )
    datasets, labels, sentences = {}, {}, []
    if "classification" in config.tasks:
        genres = _subsample(read_stsb_genres(stsb_train), limit, seed)
        datasets["classification"], labels["classification"] = sentence_classification_dataset(genres)
        sentences += [sentence for sentence, _ in genres]
    if "pair_classification" in config.tasks:
        pairs = _subsample(read_sick_entailment(sick_train), limit, seed)
        datasets["pair_classification"], labels["pair_classification"] = pair_classification_dataset(
            pairs, SICK_LABELS
        )
        sentences += [sentence for pair in pairs for sentence in pair[:2]]
    if "sts" in config.tasks:
        parts = []
        for source in config.sts_sources:
            data = read_stsb_csv(stsb_train) if source == "stsb" else read_sick(sick_train)
            score_range = (0.0, 5.0) if source == "stsb" else (1.0, 5.0)
            rows = _subsample(list(zip(data.sentences1, data.sentences2, data.scores)), limit, seed)
            sentences1, sentences2, scores = (list(column) for column in zip(*rows))
            parts.append(sts_regression_dataset(sentences1, sentences2, scores, score_range))
            sentences += sentences1 + sentences2
        datasets["sts"] = concatenate_datasets(parts)
    return datasets, labels, sentences


def task_losses(
    model: SentenceTransformer,
    tasks: list[str],
    num_labels: dict[str, int],
    hidden_dimension: int = 768,
    dropout: float = 0.3,
    share_head_layer: bool = True,
    pair_head: PairHead = "bilinear",
    contrastive_loss: nn.Module | None = None,
) -> dict[str, nn.Module]:
    """One training-only head loss per task; with ``share_head_layer`` the pair classification and STS losses use
    one :class:`HeadLayer` object (the paper shares the first head layer between its paraphrase and STS heads).

    Args:
        model: the SentenceTransformer being trained.
        tasks: the task names (:data:`TASKS`).
        num_labels: the number of classes of each classification task.
        hidden_dimension: the width of every head's hidden layer (the paper: 768).
        dropout: the dropout of every head's hidden layer (the paper: 0.3).
        share_head_layer: one hidden layer for the pair classification and STS heads.
        pair_head: the pair classifier, ``"bilinear"`` (the paper's) or ``"concat"`` (SBERT's SoftmaxLoss).
        contrastive_loss: the contrastive stage's loss, for the ``"contrastive"`` task.

    Example::

        from sbert_nonling.methods import task_losses
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder

        encoder = build_tiny_encoder("tiny-bert", ["A man plays a guitar.", "A cat sleeps."], hidden_size=32)
        model = build_sentence_model(str(encoder), pooling="cls")
        losses = task_losses(model, ["classification", "sts"], {"classification": 5}, hidden_dimension=16)
    """
    shared = HeadLayer(embedding_dimension(model), hidden_dimension, dropout) if share_head_layer else None
    losses: dict[str, nn.Module] = {}
    for task in tasks:
        if task == "classification":
            losses[task] = SentenceClassificationLoss(model, num_labels[task], hidden_dimension, dropout)
        elif task == "pair_classification":
            losses[task] = PairClassificationLoss(
                model, num_labels[task], pair_head, hidden_dimension, dropout, head_layer=shared
            )
        elif task == "sts":
            losses[task] = STSRegressionLoss(model, hidden_dimension, dropout, head_layer=shared)
        elif task == "contrastive":
            if contrastive_loss is None:
                raise ValueError("The contrastive task needs the contrastive loss (and data: nli_file or text_file).")
            losses[task] = contrastive_loss
        else:
            raise ValueError(f"Unknown task {task!r}; tasks: {list(TASKS)}.")
    return losses


def _examples(dataset: Dataset | DatasetDict) -> int | dict[str, int]:
    return {name: len(part) for name, part in dataset.items()} if isinstance(dataset, DatasetDict) else len(dataset)


def build_multitask(config: MultitaskConfig, data: DataSources) -> MethodPlan:
    """The multitask method's pieces (docs/multitask.md), as two stages (one whose ``max_steps`` is 0 is left out):
    ``contrastive`` (:class:`SimCSELoss` on NLI triplets and/or ``(s, s)`` pairs) and ``multitask`` (the
    training-only heads of ``config.tasks``, see :data:`TASKS`, mixed by ``config.scheme``; built when the stage
    starts). Each stage has its own optimizer settings and ``stages/<stage>/checkpoints``; call
    ``transformers.set_seed(config.seed)`` first to reproduce the runner.

    Args:
        config: :class:`MultitaskConfig` (the ``multitask`` recipe).
        data: ``nli_file`` / ``text_file`` (the contrastive data); ``sts_dir``: SentEval-layout STS folder holding
            ``STSBenchmark/sts-train.csv`` and ``SICK/SICK_train.txt`` (the tasks) and the dev sets.

    Example::

        import os
        from transformers import set_seed

        from sbert_nonling.configs import MultitaskConfig, StageConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_multitask

        data = os.environ["SBERT_NONLING_SHARED"] + "/data"
        stage = StageConfig(learning_rate=1e-4, batch_size=16, max_steps=1)
        # offline: a tiny random BERT; e.g. MultitaskConfig(): bert-base-uncased, the paper's stages
        config = MultitaskConfig(model="tiny:bert", max_seq_length=32, contrastive=stage, multitask=stage,
                                 train_limit=48)
        set_seed(config.seed)
        sources = DataSources(nli_file=data + "/corpus/snli_devtest_triplets.csv", sts_dir=data + "/sts")
        plan = build_multitask(config, sources)
        plan.train()  # contrastive, then multitask
    """
    _check_tasks(config)
    if data.sts_dir is None:
        raise ValueError(
            "The multitask recipe trains on SICK and STS-B train files: pass sts_dir holding "
            "STSBenchmark/sts-train.csv and SICK/SICK_train.txt."
        )
    contrastive_runs, multitask_runs = config.contrastive.max_steps != 0, config.multitask.max_steps != 0
    contrastive_data, sentences = _contrastive_dataset(data.text_file, data.nli_file, config.train_limit, config.seed)
    if (contrastive_runs or "contrastive" in config.tasks) and contrastive_data is None:
        raise ValueError(
            "The contrastive stage trains on NLI triplets or sentences: pass nli_file (sent0,sent1,hard_neg CSV) or "
            "text_file."
        )
    datasets, labels, task_sentences = _task_datasets(config, Path(data.sts_dir)) if multitask_runs else ({}, {}, [])
    sentence_model = starting_sentence_model(config, sentences + task_sentences, tiny_encoder=config.tiny_encoder)
    evaluator = sts_dev_evaluator(data.sts_dir, config.eval_tasks) if data.sts_dir is not None else None
    contrastive_loss = None
    if contrastive_data is not None:
        contrastive_loss = text_contrastive_loss(sentence_model, config.text_loss)

    stages: list[TrainingStage | ModelUpdate] = []
    if contrastive_runs:
        assert contrastive_data is not None and contrastive_loss is not None  # refused above when it is missing
        args = stage_arguments(config, "contrastive", config.contrastive, evaluator is not None)
        loss: nn.Module | dict[str, nn.Module] = (
            dict.fromkeys(contrastive_data, contrastive_loss)
            if isinstance(contrastive_data, DatasetDict)
            else contrastive_loss
        )
        named = (
            {}
            if isinstance(contrastive_data, DatasetDict)
            else {"train_dataset_name": "nli" if data.nli_file is not None else "text"}
        )
        stages.append(
            TrainingStage(
                "contrastive",
                contrastive_data,
                loss,
                args,
                trainer_kwargs=named,
                record={"stage": "contrastive", "examples": _examples(contrastive_data)},
            )
        )
    if multitask_runs:
        if "contrastive" in config.tasks:
            datasets["contrastive"] = (
                contrastive_data["nli"] if isinstance(contrastive_data, DatasetDict) else contrastive_data
            )
        task_data = DatasetDict({task: datasets[task] for task in config.tasks})
        sampler = multitask_sampler_arguments(config.scheme, len(config.tasks))
        args = stage_arguments(
            config,
            "multitask",
            config.multitask,
            evaluator is not None,
            gradient_accumulation_steps=sampler["gradient_accumulation_steps"],
        )
        args.batch_sampler = BatchSamplers.BATCH_SAMPLER
        args.multi_dataset_batch_sampler = sampler["multi_dataset_batch_sampler"]

        def heads() -> dict[str, nn.Module]:
            return task_losses(
                sentence_model,
                list(config.tasks),
                {task: len(names) for task, names in labels.items()},
                hidden_dimension=config.heads.hidden_dimension,
                dropout=config.heads.dropout,
                share_head_layer=config.heads.share_head_layer,
                pair_head=config.heads.pair_head,
                contrastive_loss=contrastive_loss,
            )

        record = {
            "stage": "multitask",
            "examples": _examples(task_data),
            "labels": {task: list(names) for task, names in labels.items()},
        }
        stages.append(TrainingStage("multitask", task_data, heads, args, record=record))
    return MethodPlan(
        sentence_model,
        stages,
        evaluator,
    )
