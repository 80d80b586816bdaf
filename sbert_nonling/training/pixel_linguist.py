"""Pixel Linguist's curriculum: visual alignment runs -> weight average -> topical -> reasoning (-> leapfrogging)."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

from datasets import Dataset
from sentence_transformers import SentenceTransformer
from transformers import set_seed

from sbert_nonling.data.parallel import parallel_pairs_dataset, stsb_multi_parallel_pairs
from sbert_nonling.data.perturbations import PerturbationPairs, span_pairs_dataset
from sbert_nonling.data.text import read_nli_triplets, read_sentences
from sbert_nonling.evaluation.sts import evaluate_sts, evaluate_sts_dir, sts_dev_evaluator
from sbert_nonling.evaluation.sts_data import load_stsb_multi_dir
from sbert_nonling.losses.symmetric_info_nce import SymmetricInfoNCE
from sbert_nonling.models.pixel_model import build_pixel_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.training.arguments import dev_curve, training_arguments
from sbert_nonling.training.output_folder import prepare_output_dir
from sbert_nonling.training.preemption import TrainingPreempted
from sbert_nonling.training.run_record import training_data_lines, write_run_record
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.weight_averaging import average_state_dicts

logger = logging.getLogger(__name__)

#: Stage name -> the data it trains on (each stage's hyper-parameters are the recipe keys ``<stage>_...``).
STAGE_DATA = {
    "visual": "text (anchor) and a perturbed copy (positive), one run per perturbation set",
    "topical": "two random spans of the same document",
    "reasoning": "NLI premise and entailment hypothesis (no contradictions)",
    "parallel": "English sentence and its translation",
}


def _stage_settings(settings: dict[str, Any], stage: str) -> dict[str, Any]:
    """The trainer settings of ``stage``: its ``<stage>_learning_rate`` / ``_batch_size`` / ``_max_steps`` /
    ``_warmup_steps`` (training stops at max_steps, cycling through a small dataset as often as needed)."""
    stage_settings = dict(settings)
    for key in ("learning_rate", "batch_size", "max_steps", "warmup_steps"):
        stage_settings[key] = settings[f"{stage}_{key}"]
    return stage_settings


def _train_stage(
    model: SentenceTransformer,
    dataset: Dataset,
    settings: dict[str, Any],
    stage: str,
    stage_dir: Path,
    sts_dir: str | Path | None,
) -> dict[str, Any]:
    """One contrastive run of the curriculum with :class:`SymmetricInfoNCE`; returns its log entry."""
    stage_settings = _stage_settings(settings, stage)
    set_seed(settings["seed"])
    evaluating = sts_dir is not None
    args = training_arguments(stage_settings, stage_dir, evaluating, joint=False, interleaved=False)
    loss = SymmetricInfoNCE(
        model, temperature=settings["temperature"], token_head=settings["token_head"], gather_across_devices=args.world_size > 1
    )
    trainer = NonLinguisticTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=loss,
        evaluator=sts_dev_evaluator(sts_dir) if evaluating else None,
    )
    try:
        train_output = trainer.train()
    except TrainingPreempted as stop:  # the stage's checkpoint is complete, but the recipe restarts as a whole
        raise TrainingPreempted(stop.signal_number, stop.checkpoint, resumable=False) from None
    entry = {
        "stage": stage,
        "pairs": len(dataset),
        "global_step": trainer.state.global_step,
        "dev_curve": dev_curve(trainer.state.log_history),
        "train_seconds": train_output.metrics["train_runtime"],
    }
    if evaluating:
        entry["dev"] = evaluate_sts_dir(model, sts_dir, "dev")
    return entry


def train_pixel_linguist(
    settings: dict[str, Any],
    output_dir: str | Path,
    text_file: str | Path | None = None,
    nli_file: str | Path | None = None,
    sts_dir: str | Path | None = None,
    stsb_multi_dir: str | Path | None = None,
    model: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Run the ``pixel-linguist`` recipe: Pixel Linguist's curriculum on a PIXEL encoder reading rendered text.

    1. Visual alignment: from the same start, one run per entry of ``perturbation_sets`` on (text, perturbed text)
       pairs of ``text_file``; the resulting weights are averaged uniformly ("ensemble").
    2. Topical alignment: two random spans of each line of ``text_file`` (a line is a document) as positives.
    3. Reasoning alignment: NLI (premise, entailment) pairs of ``nli_file``.
    4. Optional cross-lingual leapfrogging (``leapfrog_iterations`` > 0): alternate parallel pairs (English anchor,
       from the stsb_multi ``train`` files of ``parallel_languages`` in ``stsb_multi_dir``) and English NLI.

    Every run uses :class:`SymmetricInfoNCE` (tau ``temperature``, optional training-only token head) and keeps its
    best checkpoint on STS-B dev when ``sts_dir`` is given. A stage whose ``<stage>_max_steps`` is 0 is skipped.
    STS-B dev (and the multilingual STS-B dev sets of ``stsb_multi_dir``) are scored before and after.
    A run ``output_dir`` already holds is refused unless ``overwrite`` (:func:`prepare_output_dir`).

    Returns:
        ``{"recipe", "model", "export", "dev_before", "dev_after", "multilingual_before", "multilingual_after",
        "stages", "global_step", "best_checkpoint"}`` (``export`` is None: a pixel model has no token text route).
    """
    output_dir = prepare_output_dir(output_dir, overwrite=overwrite, resumable=False)
    set_seed(settings["seed"])
    if settings["tiny"]:
        encoder = PixelEncoder.from_config(max_patches=settings["max_patches"], **settings["tiny_encoder"])
    else:
        encoder = PixelEncoder.from_pretrained(model or settings["model"], max_patches=settings["max_patches"])
    pixel_model = build_pixel_model(encoder, max_patches=settings["max_patches"])
    multilingual = load_stsb_multi_dir(stsb_multi_dir, "dev") if stsb_multi_dir else []
    dev_before = evaluate_sts_dir(pixel_model, sts_dir, "dev") if sts_dir else {}
    multilingual_before = evaluate_sts(pixel_model, multilingual) if multilingual else {}

    sentences = read_sentences(text_file) if text_file else None
    nli_pairs = [(premise, entailment) for premise, entailment, _ in read_nli_triplets(nli_file)] if nli_file else None
    stages: list[dict[str, Any]] = []

    def run(stage: str, dataset: Dataset, name: str) -> None:
        stages.append({**_train_stage(pixel_model, dataset, settings, stage, output_dir / "stages" / name, sts_dir), "name": name})

    def require(data: Any, option: str, stage: str) -> Any:
        if data is None:
            raise ValueError(f"The {stage} stage trains on {STAGE_DATA[stage]}: pass {option}.")
        return data

    if settings["visual_max_steps"] > 0:
        sentences = require(sentences, "text_file", "visual")
        start = copy.deepcopy(pixel_model.state_dict())
        states = []
        for index, perturbation_set in enumerate(settings["perturbation_sets"]):
            pixel_model.load_state_dict(start)
            pairs = Dataset.from_dict({"text": sentences}).map(
                PerturbationPairs(perturbation_set, rate=settings["perturbation_rate"], seed=settings["seed"]),
                batched=True,
                remove_columns=["text"],
            )
            run("visual", pairs, f"visual-{index}-{'+'.join(perturbation_set)}")
            states.append(copy.deepcopy(pixel_model.state_dict()))
        pixel_model.load_state_dict(average_state_dicts(states))
        if sts_dir:
            stages.append({"stage": "average", "name": "visual-average", "runs": len(states), "dev": evaluate_sts_dir(pixel_model, sts_dir, "dev")})
    if settings["topical_max_steps"] > 0:
        sentences = require(sentences, "text_file", "topical")
        spans = span_pairs_dataset(sentences, settings["span_min_words"], settings["span_max_words"], settings["seed"])
        run("topical", spans, "topical")
    nli = Dataset.from_dict(dict(zip(("anchor", "positive"), map(list, zip(*nli_pairs))))) if nli_pairs else None
    if settings["reasoning_max_steps"] > 0:
        run("reasoning", require(nli, "nli_file", "reasoning"), "reasoning")
    if settings["leapfrog_iterations"] > 0:
        parallel_dir = require(stsb_multi_dir, "stsb_multi_dir", "parallel")
        parallel = parallel_pairs_dataset(stsb_multi_parallel_pairs(parallel_dir, settings["parallel_languages"]))
        for iteration in range(settings["leapfrog_iterations"]):
            run("parallel", parallel, f"leapfrog-{iteration}-parallel")
            run("reasoning", require(nli, "nli_file", "reasoning"), f"leapfrog-{iteration}-reasoning")

    pixel_model.save(str(output_dir / "model"))
    result = {
        "recipe": settings["name"],
        "model": str(output_dir / "model"),
        "export": None,
        "dev_before": dev_before,
        "dev_after": evaluate_sts_dir(pixel_model, sts_dir, "dev") if sts_dir else {},
        "multilingual_before": multilingual_before,
        "multilingual_after": evaluate_sts(pixel_model, multilingual) if multilingual else {},
        "stages": stages,
        "global_step": sum(entry.get("global_step", 0) for entry in stages),
        "best_checkpoint": None,
    }
    data = training_data_lines(text_file=text_file, nli_file=nli_file, stsb_multi_dir=stsb_multi_dir if settings["leapfrog_iterations"] else None)
    write_run_record(output_dir, settings, result, {"model": "pixel"}, data)
    return result
