"""The PNG plots ``sbert-nonling eval --plots`` writes (see :func:`write_eval_plots`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sbert_nonling.util.optional import require_extra

(matplotlib,) = require_extra("plots", "Plots (sbert_nonling.evaluation.plots, sbert-nonling eval --plots)")
matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

from sbert_nonling.evaluation.geometry import alignment_uniformity, anisotropy  # noqa: E402
from sbert_nonling.evaluation.robustness import robustness_report  # noqa: E402
from sbert_nonling.evaluation.sts_data import load_sts_dir, load_stsb_multi_dir  # noqa: E402
from sbert_nonling.modules.pixel_renderer import PixelRenderer  # noqa: E402


def _save(figure: plt.Figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_alignment_uniformity(points: Mapping[str, Mapping[str, float]], path: str | Path) -> Path:
    """One point per model: uniformity (x) against alignment (y), lower-left is better (MCSE Figure 2).

    Args:
        points: model label -> ``{"alignment": ..., "uniformity": ...}`` (:func:`alignment_uniformity`).
        path: the PNG file to write.
    """
    figure, axes = plt.subplots(figsize=(4.5, 4))
    for label, point in points.items():
        axes.scatter(point["uniformity"], point["alignment"], s=40)
        axes.annotate(label, (point["uniformity"], point["alignment"]), textcoords="offset points", xytext=(5, 5))
    axes.set(
        xlabel="uniformity (lower is better)",
        ylabel="alignment (lower is better)",
        title="STS-B: alignment vs uniformity",
    )
    return _save(figure, Path(path))


def plot_anisotropy(values: Mapping[str, float], path: str | Path) -> Path:
    """Bars: mean cosine between distinct sentences, per language.

    Args:
        values: language -> mean cosine (:func:`anisotropy`).
        path: the PNG file to write.
    """
    figure, axes = plt.subplots(figsize=(max(4, 0.6 * len(values) + 1), 3.5))
    axes.bar(list(values), list(values.values()))
    axes.set(
        ylabel="mean cosine (anisotropy)", ylim=(min(0.0, min(values.values())), 1.0), title="Anisotropy per language"
    )
    return _save(figure, Path(path))


def plot_training_curves(log_history: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Training loss (and each logged loss component) and STS-B dev against the step, from ``trainer_state.json``.

    Args:
        log_history: the ``log_history`` list of a ``trainer_state.json``.
        path: the PNG file to write.
    """
    figure, (losses, dev) = plt.subplots(1, 2, figsize=(9, 3.5))
    loss_keys = sorted(
        {
            key
            for entry in log_history
            for key in entry
            if key == "loss" or (key.endswith("_loss") and not key.startswith(("eval", "train")))
        }
    )
    for key in loss_keys:
        points = [(entry["step"], entry[key]) for entry in log_history if key in entry]
        losses.plot(*zip(*points), label=key)
    losses.set(xlabel="step", ylabel="loss")
    losses.legend()
    points = [
        (entry["step"], 100 * entry["eval_STSBenchmark_spearman_cosine"])
        for entry in log_history
        if "eval_STSBenchmark_spearman_cosine" in entry
    ]
    if points:
        dev.plot(*zip(*points), marker="o")
    dev.set(xlabel="step", ylabel="STS-B dev Spearman x100")
    return _save(figure, Path(path))


def plot_robustness(report: Mapping[str, Mapping[str, Any]], path: str | Path) -> Path:
    """Grouped bars: STS change (points) under each perturbation, one colour per model (Pixel Linguist Table 1).

    Args:
        report: a :func:`~sbert_nonling.evaluation.robustness.robustness_report`.
        path: the PNG file to write.
    """
    models = list(report)
    perturbations = [name for name in report[models[0]] if name != "clean"]
    figure, axes = plt.subplots(figsize=(max(5, 0.9 * len(perturbations) + 2), 3.5))
    width = 0.8 / len(models)
    for offset, model in enumerate(models):
        changes = [report[model][name]["change"] for name in perturbations]
        axes.bar([index + offset * width for index in range(len(perturbations))], changes, width, label=model)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xticks(
        [index + 0.4 - width / 2 for index in range(len(perturbations))], perturbations, rotation=30, ha="right"
    )
    axes.set_ylabel("STS-B dev change (points)")
    axes.legend()
    return _save(figure, Path(path))


def plot_rendered_previews(renderer: PixelRenderer, sentences: Sequence[str], path: str | Path) -> Path:
    """The strips ``renderer`` makes of ``sentences``, one per row, with patch boundaries visible.

    Args:
        renderer: the model's pixel renderer.
        sentences: the sentences to render.
        path: the PNG file to write.
    """
    figure, rows = plt.subplots(len(sentences), 1, figsize=(12, 0.45 * len(sentences) + 0.3), squeeze=False)
    for axes, sentence in zip(rows[:, 0], sentences):
        strip, patches = renderer.render(sentence)
        axes.imshow(strip, cmap="gray", vmin=0, vmax=255, aspect="equal", interpolation="nearest")
        axes.set(xticks=[16 * index for index in range(0, renderer.max_patches + 1, 8)], yticks=[])
        axes.set_title(f"{patches} patches: {sentence[:80]}", fontsize=7, loc="left")
    return _save(figure, Path(path))


def write_eval_plots(
    model: SentenceTransformer,
    output_dir: str | Path,
    sts_dir: str | Path,
    label: str = "model",
    stsb_multi_dir: str | Path | None = None,
    run_dir: str | Path | None = None,
    robustness_perturbations: Sequence[str] = ("substitute_visual", "swap", "shuffle"),
) -> list[Path]:
    """Write every plot the inputs allow into ``output_dir`` and return their paths: ``alignment_uniformity.png`` and
    ``robustness.png`` (STS-B dev); ``anisotropy.png`` with ``stsb_multi_dir``; ``training_curves.png`` (newest
    checkpoint's ``trainer_state.json``) with ``run_dir``; ``rendered.png`` for a model that reads text as pixels.

    Args:
        model: the model to plot.
        output_dir: the folder the PNG files go to (created if missing).
        sts_dir: the SentEval-layout STS folder holding STS-B dev.
        label: the model's name in legends.
        stsb_multi_dir: the stsb_multi_mt folder (anisotropy per language); None skips that plot.
        run_dir: the run folder whose newest checkpoint holds the training log; None skips the curves.
        robustness_perturbations: the perturbations of the robustness plot
            (:data:`~sbert_nonling.data.perturbations.PERTURBATIONS`).
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    stsb_dev = load_sts_dir(sts_dir, "dev", tasks=("STSBenchmark",))[0]
    paths = [
        plot_alignment_uniformity(
            {label: alignment_uniformity(model, stsb_dev)}, output_dir / "alignment_uniformity.png"
        ),
        plot_robustness(
            robustness_report({label: model}, stsb_dev, robustness_perturbations), output_dir / "robustness.png"
        ),
    ]
    if stsb_multi_dir is not None:
        tasks = load_stsb_multi_dir(stsb_multi_dir, "dev")
        values = {
            task.name.rsplit("-", 1)[-1]: anisotropy(model, sorted(set(task.sentences1))[:200]) for task in tasks
        }
        paths.append(plot_anisotropy(values, output_dir / "anisotropy.png"))
    if run_dir is not None:
        states = sorted(
            Path(run_dir).glob("**/checkpoint-*/trainer_state.json"),
            key=lambda path: int(path.parent.name.split("-")[1]),
        )
        if not states:
            raise ValueError(
                f"{str(run_dir)!r} holds no checkpoint-*/trainer_state.json to plot training curves from."
            )
        history = json.loads(states[-1].read_text(encoding="utf-8"))["log_history"]
        paths.append(plot_training_curves(history, output_dir / "training_curves.png"))
    renderer = next((module for module in model.modules() if isinstance(module, PixelRenderer)), None)
    if renderer is not None:
        paths.append(plot_rendered_previews(renderer, stsb_dev.sentences1[:6], output_dir / "rendered.png"))
    return paths


def plot_seed_scores(scores: Mapping[str, Sequence[float]], paper: Mapping[str, float], path: str | Path) -> Path:
    """Each run's score (a dot per seed) per recipe, with the mean (a bar) and the paper's value (a cross) beside
    it: ``sbert-nonling reproduce``'s ``reproduce_seeds.png``.

    Args:
        scores: recipe -> the score of each of its runs (e.g. the average of the 7 STS test sets, x100).
        paper: recipe -> the paper's value (recipes without one are left out).
        path: the PNG file to write.
    """
    figure, axes = plt.subplots(figsize=(1.6 + 1.2 * len(scores), 3.5))
    for position, (recipe, values) in enumerate(scores.items()):
        axes.scatter(
            [position] * len(values), values, color="tab:blue", alpha=0.7, label="seed" if not position else None
        )
        axes.hlines(sum(values) / len(values), position - 0.25, position + 0.25, color="tab:blue")
        if recipe in paper:
            label = "paper" if recipe == next(name for name in scores if name in paper) else None
            axes.scatter([position + 0.3], [paper[recipe]], marker="x", color="tab:red", label=label)
    axes.set_xticks(range(len(scores)), list(scores), rotation=20)
    axes.set(ylabel="avg of 7 STS, Spearman x100")
    axes.legend()
    return _save(figure, Path(path))
