"""STS through MTEB's official tasks, online by name or offline with local data injected (``mteb`` extra). Further
reading: docs/evaluation.md."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from sentence_transformers import SentenceTransformer

from sbert_nonling.evaluation.sts_data import STS_TASKS, STSData
from sbert_nonling.util.optional import require_extra

(mteb,) = require_extra("mteb", "The MTEB runner (sbert_nonling.evaluation.mteb_runner, sbert-nonling eval --mteb)")
from mteb.models import ModelMeta, SentenceTransformerEncoderWrapper  # noqa: E402

MULTILINGUAL_TASK = "STSBenchmarkMultilingualSTS"
#: MTEB split name of local data that does not say its split (``STSData.split``; dev data is never reported as test).
LOCAL_SPLIT = "local"


def wrap_for_mteb(
    model: SentenceTransformer, model_name: str, revision: str | None = None, modalities: Sequence[str] = ("text",)
):
    """MTEB's SentenceTransformer wrapper with a real model name (``local/<name>`` without "/"), revision and
    modalities.

    Args:
        model: the model to evaluate.
        model_name: the name MTEB records in its results (a path keeps its last one or two parts).
        revision: the model revision MTEB records; None for a local model.
        modalities: the modalities MTEB may send the model.
    """
    wrapper = SentenceTransformerEncoderWrapper(model)
    name = model_name.strip("/").split("/")[-2:]
    fields = {
        **wrapper.mteb_model_meta.model_dump(),
        "name": "/".join(name) if len(name) == 2 else f"local/{name[0]}",
        "revision": revision or "local",
        "modalities": list(modalities),
    }
    wrapper.mteb_model_meta = ModelMeta.model_validate(fields)
    return wrapper


def local_mteb_tasks(tasks: Sequence[STSData]) -> list:
    """Official MTEB task objects holding the local data under its own split (``STSBenchmarkMultilingualSTS-<lang>`` as
    subsets of the multilingual task), for your own ``mteb.evaluate``.

    Args:
        tasks: local STS tasks (:mod:`sbert_nonling.evaluation.sts_data`), named as MTEB's tasks.
    """
    result, multilingual = [], {}
    for data in tasks:
        if data.name.startswith(f"{MULTILINGUAL_TASK}-"):
            multilingual[data.name.removeprefix(f"{MULTILINGUAL_TASK}-")] = data
            continue
        if data.name not in STS_TASKS:
            raise ValueError(f"Task {data.name!r} has no MTEB counterpart; MTEB STS tasks: {list(STS_TASKS)}.")
        result.append(_inject(mteb.get_task(data.name), data.split, data))
    if multilingual:
        task = mteb.get_task(MULTILINGUAL_TASK, hf_subsets=list(multilingual))
        result.append(_inject(task, next(iter(multilingual.values())).split, multilingual))
    return result


def _inject(task: Any, split: str, data: Any) -> Any:
    """``task`` holding ``data`` (one STSData, or one per subset) as its only split (:data:`LOCAL_SPLIT` if not
    said)."""
    from datasets import Dataset, DatasetDict

    def splits(item: STSData) -> DatasetDict:
        return DatasetDict(
            {
                split: Dataset.from_dict(
                    {"sentence1": item.sentences1, "sentence2": item.sentences2, "score": item.scores}
                )
            }
        )

    split = split or LOCAL_SPLIT
    task.filter_eval_splits([split])
    task.dataset = {subset: splits(item) for subset, item in data.items()} if isinstance(data, dict) else splits(data)
    task.data_loaded = True
    return task


def evaluate_sts_mteb(
    model: SentenceTransformer,
    tasks: Sequence[STSData] | Sequence[str],
    model_name: str = "local/model",
    revision: str | None = None,
    encode_kwargs: dict[str, Any] | None = None,
    batch_size: int = 64,
) -> dict[str, float]:
    """Cosine Spearman x100 per task from ``mteb.evaluate``, plus ``"avg"``.

    Args:
        model: the model to evaluate.
        tasks: local :class:`STSData` (offline, injected into the official tasks) or MTEB task names (downloaded).
        model_name, revision: the metadata MTEB records.
        encode_kwargs, batch_size: passed to ``model.encode``.
    """
    names = [task for task in tasks if isinstance(task, str)]
    if tasks and len(names) == len(tasks):
        mteb_tasks = list(mteb.get_tasks(tasks=names))
    else:
        local = [task for task in tasks if isinstance(task, STSData)]
        if len(local) != len(tasks):
            raise ValueError("tasks: either MTEB task names or STSData, not a mix of both.")
        mteb_tasks = local_mteb_tasks(local)
    wrapper = wrap_for_mteb(model, model_name, revision)
    encode = {"batch_size": batch_size, "show_progress_bar": False, **(encode_kwargs or {})}
    results = mteb.evaluate(
        wrapper, mteb_tasks, cache=None, co2_tracker=False, show_progress_bar=False, encode_kwargs=encode
    )
    scores: dict[str, float] = {}
    for task_result in results.task_results:
        for subset in chain.from_iterable(task_result.scores.values()):
            suffix = f"-{subset['hf_subset']}" if task_result.task_name == MULTILINGUAL_TASK else ""
            scores[task_result.task_name + suffix] = 100.0 * subset["cosine_spearman"]
    scores["avg"] = sum(scores.values()) / len(scores)
    return scores
