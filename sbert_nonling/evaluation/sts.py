"""The fast STS evaluator over local files: cosine Spearman x100 per task, built on EmbeddingSimilarityEvaluator."""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np
from datasets import load_dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator, SequentialEvaluator

from sbert_nonling.evaluation.sts_data import STS_TASKS, STSData, check_sts_dev_dir, load_sts_dir
from sbert_nonling.util.choices import EvalTasks, Split

logger = logging.getLogger(__name__)


class STSEvaluator(EmbeddingSimilarityEvaluator):
    """An :class:`EmbeddingSimilarityEvaluator` of cosine Spearman for one :class:`STSData` task, named after it,
    passing ``encode_kwargs`` to ``model.encode``; a task without two different gold scores (NaN otherwise) is
    refused.

    Args:
        data: the STS task to score (its ``name`` names the evaluator and its metrics).
        batch_size: sentences per ``encode`` batch.
        encode_kwargs: extra keyword arguments of ``model.encode`` (e.g. ``{"normalize_embeddings": True}``).
    """

    def __init__(self, data: STSData, batch_size: int = 64, encode_kwargs: dict[str, Any] | None = None) -> None:
        if len(set(data.scores)) < 2:
            where = f" ({data.source})" if data.source else ""
            value = f"every gold score is {data.scores[0]!r}" if data.scores else "it has no pairs"
            raise ValueError(
                f"STS task {data.name!r}{where}: {value}; a Spearman correlation needs at least two different gold "
                "scores (it would be NaN). Check the file."
            )
        # main_similarity alone makes cosine the only similarity function
        super().__init__(
            data.sentences1,
            data.sentences2,
            data.scores,
            batch_size=batch_size,
            main_similarity="cosine",
            name=data.name,
            write_csv=False,
        )
        self.encode_kwargs = dict(encode_kwargs or {})

    def embed_inputs(
        self, model: SentenceTransformer, sentences: str | list[str] | np.ndarray, **kwargs
    ) -> np.ndarray:
        return super().embed_inputs(model, sentences, **self.encode_kwargs, **kwargs)


#: The Hub copy of STS-B used when no local STS folder is given (columns sentence1, sentence2, score in [0, 1]).
STSB_HUB_DATASET = "sentence-transformers/stsb"


def sts_dev_evaluator(
    sts_dir: str | Path | None, tasks: EvalTasks = "all", batch_size: int = 64
) -> SequentialEvaluator:
    """The training-time evaluator: STS-B dev (required: its cosine Spearman selects checkpoints) found in ``sts_dir``,
    or with ``sts_dir=None`` from the Hub (:data:`STSB_HUB_DATASET`); with ``tasks="all"`` every other dev task found
    in ``sts_dir`` after it, with ``tasks="selection"`` none.

    Args:
        sts_dir: the SentEval-layout STS folder, or None to load STS-B dev from the Hub.
        tasks: ``"all"`` (STS-B dev, then every other dev task found) or ``"selection"`` (STS-B dev only).
        batch_size: sentences per ``encode`` batch.
    """
    if tasks not in get_args(EvalTasks):
        raise ValueError(
            f"tasks={tasks!r} must be 'selection' (STS-B dev alone) or 'all' (every dev task of sts_dir)."
        )
    if sts_dir is None:
        dev = load_dataset(STSB_HUB_DATASET, split="validation")
        dev_tasks = [
            STSData(
                "STSBenchmark",
                list(dev["sentence1"]),
                list(dev["sentence2"]),
                list(dev["score"]),
                source=STSB_HUB_DATASET,
            )
        ]
    else:
        dev_tasks = check_sts_dev_dir(sts_dir)
    scored = dev_tasks if tasks == "all" else dev_tasks[:1]
    # the first evaluator's (STS-B dev's) primary metric is the SequentialEvaluator's
    return SequentialEvaluator(
        [STSEvaluator(task, batch_size=batch_size) for task in scored], main_score_function=operator.itemgetter(0)
    )


def evaluate_sts(
    model: SentenceTransformer,
    tasks: Sequence[STSData],
    batch_size: int = 64,
    encode_kwargs: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Cosine Spearman x100 per task, plus ``"avg"`` over the tasks, in the order given.

    Args:
        model: the model to score.
        tasks: the STS tasks.
        batch_size: sentences per ``encode`` batch.
        encode_kwargs: extra keyword arguments of ``model.encode``.
    """
    scores: dict[str, float] = {}
    for task in tasks:
        evaluator = STSEvaluator(task, batch_size=batch_size, encode_kwargs=encode_kwargs)
        scores[task.name] = 100.0 * evaluator(model)[evaluator.primary_metric]
        logger.info(f"{task.name}: {scores[task.name]:.2f} ({len(task)} pairs)")
    scores["avg"] = sum(scores.values()) / len(scores)
    return scores


def evaluate_sts_dir(
    model: SentenceTransformer,
    sts_dir: str | Path,
    split: Split = "dev",
    tasks: tuple[str, ...] = STS_TASKS,
    batch_size: int = 64,
    encode_kwargs: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Score every task of ``split`` found in ``sts_dir`` (SentEval's folder names); see :func:`evaluate_sts`.

    Args:
        model: the model to score.
        sts_dir: the SentEval-layout STS folder.
        split: ``"dev"`` or ``"test"``.
        tasks: the task names to look for (MTEB's names).
        batch_size: sentences per ``encode`` batch.
        encode_kwargs: extra keyword arguments of ``model.encode``.
    """
    return evaluate_sts(model, load_sts_dir(sts_dir, split, tasks), batch_size=batch_size, encode_kwargs=encode_kwargs)
