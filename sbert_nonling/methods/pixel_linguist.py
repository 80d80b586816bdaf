"""Pixel Linguist (Xiao et al., 2024) as a plan: PIXEL reads rendered text; visual alignment runs from one start,
averaged, then topical and reasoning alignment (then optional cross-lingual leapfrogging)."""

from __future__ import annotations

import copy
from typing import Any

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer

from sbert_nonling.configs.pixel_linguist import PixelLinguistConfig
from sbert_nonling.data.parallel import parallel_pairs_dataset, stsb_multi_parallel_pairs
from sbert_nonling.data.perturbations import PerturbationPairs, span_pairs_dataset
from sbert_nonling.data.sources import DataSources
from sbert_nonling.data.text import read_nli_triplets, read_sentences
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.losses.symmetric_info_nce import SymmetricInfoNCE
from sbert_nonling.methods.plan import MethodPlan, ModelHook, ModelUpdate, TrainingStage
from sbert_nonling.methods.sentence_encoder import MODEL_OFFLINE, MODEL_SETTING
from sbert_nonling.models.pixel_model import build_pixel_model
from sbert_nonling.models.tiny_encoder import resolve_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.training.arguments import stage_arguments
from sbert_nonling.training.continuous_epochs import ContinuousEpochsTrainer
from sbert_nonling.training.weight_averaging import average_state_dicts
from sbert_nonling.util.unreachable import loading

#: Stage name -> the data it trains on (each stage's hyper-parameters are the config's ``<stage>_...`` fields).
STAGE_DATA = {
    "visual": "text (anchor) and a perturbed copy (positive), one run per perturbation set",
    "topical": "two random spans of the same document",
    "reasoning": "NLI premise and entailment hypothesis (no contradictions)",
    "parallel": "English sentence and its translation",
}


class WeightAverage:
    """The visual stage's ensemble: every run starts from the weights the first one started from, and the weights
    the runs end with are averaged uniformly (:func:`average_state_dicts`). Its methods are the plan's hooks."""

    def __init__(self) -> None:
        self.start: dict[str, torch.Tensor] | None = None
        self.states: list[dict[str, torch.Tensor]] = []

    def restore_start(self, model: SentenceTransformer) -> None:
        """Before a run: remember the weights (first run) or go back to them (later runs).

        Args:
            model: the Pixel Linguist model the runs train.
        """
        if self.start is None:
            self.start = copy.deepcopy(model.state_dict())
        else:
            model.load_state_dict(self.start)

    def collect(self, model: SentenceTransformer) -> None:
        """After a run: keep its weights.

        Args:
            model: the model the run trained.
        """
        self.states.append(copy.deepcopy(model.state_dict()))

    def apply(self, model: SentenceTransformer) -> None:
        """Load the average of the kept weights.

        Args:
            model: the model that receives the average.
        """
        model.load_state_dict(average_state_dicts(self.states))


def _required(data: Any, option: str, stage: str) -> Any:
    if data is None:
        raise ValueError(f"The {stage} stage trains on {STAGE_DATA[stage]}: pass {option}.")
    return data


def build_pixel_linguist(config: PixelLinguistConfig, data: DataSources) -> MethodPlan:
    """Pixel Linguist's curriculum (docs/pixel_linguist.md) on a PIXEL encoder reading rendered text (``config.model``:
    a PIXEL checkpoint, or ``tiny:pixel``, a small random one sized by ``config.tiny_encoder``): visual
    alignment (one run per ``config.perturbation_sets`` entry from the same start, then a weight average), topical
    alignment (two spans of a ``text_file`` line), reasoning alignment (NLI entailment pairs), and optional
    cross-lingual leapfrogging (``config.leapfrog_iterations``). Every run trains :class:`SymmetricInfoNCE`, built
    after resetting the seed, with its stage's optimizer settings; a stage whose ``max_steps`` is 0 is left out.
    Every run trains with :class:`~sbert_nonling.training.continuous_epochs.ContinuousEpochsTrainer`: the epochs of a
    run longer than its dataset are one DataLoader pass, so the workers render the next epoch's first batches early.

    Args:
        config: :class:`PixelLinguistConfig` (the ``pixel-linguist`` recipe).
        data: ``text_file`` (visual, topical), ``nli_file`` (reasoning), ``stsb_multi_dir`` (leapfrogging's
            parallel pairs), ``sts_dir`` (dev evaluation).

    Example::

        import os
        from transformers import set_seed

        from sbert_nonling.configs import PixelLinguistConfig, StageConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_pixel_linguist

        data = os.environ["SBERT_NONLING_SHARED"] + "/data/corpus"
        stage = StageConfig(learning_rate=3e-4, batch_size=32, max_steps=1)
        # offline: a tiny random PIXEL-architecture encoder; e.g. PixelLinguistConfig(): PIXEL-base, the paper's stages
        config = PixelLinguistConfig(model="tiny:pixel", max_patches=32, perturbation_sets=[["swap"], ["shuffle"]],
                                     visual=stage, topical=stage, reasoning=stage)
        set_seed(config.seed)
        plan = build_pixel_linguist(config, DataSources(text_file=data + "/wiki1m_for_simcse.first11913.txt",
                                                        nli_file=data + "/snli_devtest_triplets.csv"))
        plan.train()  # the visual runs from one start, their weight average, topical, reasoning
    """
    sizes = {"max_patches": config.max_patches, **(config.tiny_encoder or {})}
    with resolve_model(config.model, seed=config.seed, **sizes) as name:
        with loading("PIXEL encoder", config.model, MODEL_SETTING, MODEL_OFFLINE):
            encoder = PixelEncoder.from_pretrained(name, max_patches=config.max_patches)
    pixel_model = build_pixel_model(encoder, max_patches=config.max_patches)
    evaluator = sts_dev_evaluator(data.sts_dir, config.eval_tasks) if data.sts_dir is not None else None
    sentences = read_sentences(data.text_file) if data.text_file else None
    nli_pairs = (
        [(premise, entailment) for premise, entailment, _ in read_nli_triplets(data.nli_file)]
        if data.nli_file
        else None
    )
    nli = Dataset.from_dict(dict(zip(("anchor", "positive"), map(list, zip(*nli_pairs))))) if nli_pairs else None

    def run(
        kind: str, name: str, dataset: Dataset, before: tuple[ModelHook, ...] = (), after: tuple[ModelHook, ...] = ()
    ) -> TrainingStage:
        args = stage_arguments(config, name, config.stages()[kind], evaluator is not None)

        def loss() -> SymmetricInfoNCE:
            return SymmetricInfoNCE(
                pixel_model,
                temperature=config.text_loss.temperature,
                gather_across_devices=args.world_size > 1,
                token_head=config.text_loss.token_head,
            )

        return TrainingStage(
            name,
            dataset,
            loss,
            args,
            trainer_class=ContinuousEpochsTrainer,
            trainer_kwargs={"train_dataset_name": kind},
            seed=config.seed,
            record={"stage": kind, "pairs": len(dataset)},
            before=list(before),
            after=list(after),
        )

    stages: list[TrainingStage | ModelUpdate] = []
    if config.visual.max_steps != 0:
        sentences = _required(sentences, "text_file", "visual")
        average = WeightAverage()
        for index, perturbation_set in enumerate(config.perturbation_sets):
            pairs = Dataset.from_dict({"text": sentences}).map(
                PerturbationPairs(perturbation_set, rate=config.perturbation_rate, seed=config.seed),
                batched=True,
                remove_columns=["text"],
            )
            name = f"visual-{index}-{'+'.join(perturbation_set)}"
            stages.append(run("visual", name, pairs, before=(average.restore_start,), after=(average.collect,)))
        stages.append(
            ModelUpdate(
                "visual-average", average.apply, record={"stage": "average", "runs": len(config.perturbation_sets)}
            )
        )
    if config.topical.max_steps != 0:
        sentences = _required(sentences, "text_file", "topical")
        stages.append(
            run(
                "topical",
                "topical",
                span_pairs_dataset(sentences, config.span_min_words, config.span_max_words, config.seed),
            )
        )
    if config.reasoning.max_steps != 0:
        stages.append(run("reasoning", "reasoning", _required(nli, "nli_file", "reasoning")))
    if config.leapfrog_iterations > 0:
        parallel_dir = _required(data.stsb_multi_dir, "stsb_multi_dir", "parallel")
        parallel = parallel_pairs_dataset(stsb_multi_parallel_pairs(parallel_dir, config.parallel_languages))
        for iteration in range(config.leapfrog_iterations):
            stages.append(run("parallel", f"leapfrog-{iteration}-parallel", parallel))
            stages.append(run("reasoning", f"leapfrog-{iteration}-reasoning", _required(nli, "nli_file", "reasoning")))
    return MethodPlan(
        pixel_model,
        stages,
        evaluator,
    )
