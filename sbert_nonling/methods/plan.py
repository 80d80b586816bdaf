"""What a method builder returns: the model and the training stages that train it, ready for a trainer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
from sentence_transformers.base.evaluation import SentenceEvaluator
from torch import nn
from transformers import set_seed

from sbert_nonling.export.model_card import CardForm
from sbert_nonling.training.trainer import NonLinguisticTrainer

#: A loss, one loss per training dataset, or a function building either when the stage starts.
StageLoss = nn.Module | dict[str, nn.Module] | Callable[[], nn.Module | dict[str, nn.Module]]
#: Something done to the model between or around training runs (restore a start state, collect the trained weights).
ModelHook = Callable[[SentenceTransformer], None]


@dataclass
class TrainingStage:
    """One trainer run of a method: its dataset(s), loss(es), trainer arguments and trainer class.

    ``loss`` is a loss, ``{dataset name: loss}``, or a function that builds it when the stage starts (the heads of a
    later stage are drawn after the earlier stages ran; with ``seed`` set, the random state is reset to it first).
    ``before`` / ``after`` hooks run on the model around the training; ``record`` is what the run's log entry says
    about the stage besides the trainer's numbers (e.g. ``{"stage": "visual", "pairs": 1000}``).

    Example::

        import os
        from sbert_nonling.methods import build_simcse
        from sbert_nonling.app import load_recipe
        from sbert_nonling.data import DataSources

        config = load_recipe("simcse-unsup", tiny=True, overrides={"max_steps": 1, "batch_size": 8})  # e.g. SimCSEConfig()
        plan = build_simcse(config, DataSources(text_file=os.environ["SBERT_NONLING_SHARED"] + "/data/corpus/wiki1m_for_simcse.first11913.txt"))
        plan.stages[0].trainer(plan.model, plan.evaluator).train()  # a NonLinguisticTrainer with SimCSELoss
    """

    name: str
    train_dataset: Dataset | DatasetDict
    loss: StageLoss
    args: SentenceTransformerTrainingArguments
    trainer_class: type[NonLinguisticTrainer] = NonLinguisticTrainer
    trainer_kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    before: list[ModelHook] = field(default_factory=list)
    after: list[ModelHook] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)

    def build_loss(self) -> nn.Module | dict[str, nn.Module]:
        """The stage's loss(es): built now if ``loss`` is a function (after resetting the random state to ``seed``)."""
        if self.seed is not None:
            set_seed(self.seed)
        if isinstance(self.loss, (nn.Module, dict)):
            return self.loss
        return self.loss()

    def trainer(self, model: SentenceTransformer, evaluator: SentenceEvaluator | None = None) -> NonLinguisticTrainer:
        """The stage's trainer for ``model`` (its loss built by :meth:`build_loss`); call ``.train()`` on it."""
        return self.trainer_class(
            model=model,
            args=self.args,
            train_dataset=self.train_dataset,
            loss=self.build_loss(),
            evaluator=evaluator,
            **self.trainer_kwargs,
        )


@dataclass
class ModelUpdate:
    """A step of a plan that changes the model's weights without training (Pixel Linguist's weight average);
    ``record`` is its log entry (the runner adds the STS-B dev score after it)."""

    name: str
    apply: ModelHook
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class MethodPlan:
    """A method's pieces, built and not yet trained: the model, its training stages in order, the dev evaluator.

    ``staged`` plans report every stage separately. ``has_text_export``: the model has a token text route for
    :func:`~sbert_nonling.export.text_model.export_text_model`; ``card_form``: the model card's form. ``evaluations``
    run after training (name -> scores of the trained model); ``files`` are written beside the model (file name ->
    writer of a path); ``training_data`` are the model card's data lines (:meth:`~sbert_nonling.data.DataSources.card_lines`).
    """

    model: SentenceTransformer
    stages: list[TrainingStage | ModelUpdate]
    evaluator: SentenceEvaluator | None = None
    staged: bool = False
    has_text_export: bool = True
    card_form: CardForm = "full"
    evaluations: dict[str, Callable[[SentenceTransformer], dict[str, float]]] = field(default_factory=dict)
    files: dict[str, Callable[[Path], None]] = field(default_factory=dict)
    training_data: list[str] = field(default_factory=list)
