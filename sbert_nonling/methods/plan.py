"""What a method builder returns: the model and the training stages that train it, ready to run."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
from sentence_transformers.base.evaluation import SentenceEvaluator
from torch import nn
from transformers import set_seed
from transformers.trainer_utils import TrainOutput

from sbert_nonling.training.trainer import NonLinguisticTrainer

#: A loss, one loss per training dataset, or a function building either when the stage starts.
StageLoss = nn.Module | dict[str, nn.Module] | Callable[[], nn.Module | dict[str, nn.Module]]
#: Something done to the model between or around training runs (restore a start state, collect the trained weights).
ModelHook = Callable[[SentenceTransformer], None]


@dataclass
class TrainingStage:
    """One trainer run of a method: its dataset(s), loss(es), trainer arguments and trainer class.

    :meth:`run` trains a model with it: the ``before`` hooks, then the stage's trainer (:meth:`trainer`) and its
    ``train()``, then the ``after`` hooks.

    Args:
        name: the stage's name, e.g. ``"train"``, ``"contrastive"``, ``"visual-0-confusables"``.
        train_dataset: the training dataset, or ``{dataset name: dataset}`` for several.
        loss: a loss, ``{dataset name: loss}``, or a function that builds either when the stage starts (the heads of a
            later stage are drawn after the earlier stages ran).
        args: the trainer arguments; a relative ``output_dir`` is taken inside the ``output_dir`` given to
            :meth:`run` / :meth:`trainer` (the working directory by default).
        trainer_class: :class:`~sbert_nonling.training.NonLinguisticTrainer` or a subclass.
        trainer_kwargs: the trainer class's other keyword arguments, e.g. ``{"train_dataset_name": "text"}``.
        seed: with a ``loss`` function, the random state is reset to it before the loss is built.
        before: hooks run on the model before the trainer is built (e.g. go back to a common start state).
        after: hooks run on the model after training (e.g. keep the trained weights for an average).
        record: what a run's log entry says about the stage besides the trainer's numbers (e.g.
            ``{"stage": "visual", "pairs": 1000}``).

    Example::

        import os
        from sbert_nonling.configs import SimCSEConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_simcse

        config = SimCSEConfig(model="tiny:bert", max_steps=1, batch_size=8)  # offline: a tiny random BERT
        text_file = os.environ["SBERT_NONLING_SHARED"] + "/data/corpus/wiki1m_for_simcse.first11913.txt"
        plan = build_simcse(config, DataSources(text_file=text_file))
        stage = plan.stages[0]  # a NonLinguisticTrainer run with SimCSELoss
        output = stage.run(plan.model, plan.evaluator, "runs/simcse")  # checkpoints in runs/simcse/checkpoints
        print(output.global_step)  # 1
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

    def checkpoint_dir(self, output_dir: str | Path | None = None) -> Path:
        """Where the stage writes its checkpoints: its arguments' ``output_dir``, inside ``output_dir`` when given.

        Args:
            output_dir: the folder a relative ``args.output_dir`` is taken in; default: the working directory.
        """
        assert self.args.output_dir is not None  # TrainingArguments fills its default ("trainer_output")
        return Path(output_dir or "", self.args.output_dir)

    def trainer(
        self,
        model: SentenceTransformer,
        evaluator: SentenceEvaluator | None = None,
        output_dir: str | Path | None = None,
    ) -> NonLinguisticTrainer:
        """The stage's trainer for ``model``, its loss built by :meth:`build_loss`; call ``.train()`` on it.

        Args:
            model: the model to train.
            evaluator: the dev evaluator (the best checkpoint is selected on it when the arguments say so).
            output_dir: the folder the stage's checkpoints go into (:meth:`checkpoint_dir`); the stage's own
                arguments are not changed.
        """
        args = self.args
        if output_dir is not None:
            args = copy.copy(self.args)
            args.output_dir = str(self.checkpoint_dir(output_dir))
        return self.trainer_class(
            model=model,
            args=args,
            train_dataset=self.train_dataset,
            loss=self.build_loss(),
            evaluator=evaluator,
            **self.trainer_kwargs,
        )

    def run(
        self,
        model: SentenceTransformer,
        evaluator: SentenceEvaluator | None = None,
        output_dir: str | Path | None = None,
        resume_from_checkpoint: str | bool | None = None,
        before_training: Callable[[NonLinguisticTrainer], None] | None = None,
    ) -> TrainOutput:
        """Train ``model`` with the stage: the ``before`` hooks, the stage's :meth:`trainer` and its ``train()``, then
        the ``after`` hooks. Returns what ``train()`` returned.

        Args:
            model: the model to train (in place).
            evaluator: the dev evaluator (the best checkpoint is selected on it when the arguments say so).
            output_dir: the folder the stage's checkpoints go into (:meth:`checkpoint_dir`).
            resume_from_checkpoint: a checkpoint to continue from, or True for the newest intact one.
            before_training: called with the built trainer before it trains (e.g. to check or log the batches it
                will read).
        """
        for hook in self.before:
            hook(model)
        trainer = self.trainer(model, evaluator, output_dir)
        if before_training is not None:
            before_training(trainer)
        output = trainer.train(resume_from_checkpoint=resume_from_checkpoint)
        for hook in self.after:
            hook(model)
        return output


@dataclass
class ModelUpdate:
    """A step of a plan that changes the model's weights without training (Pixel Linguist's weight average).

    Args:
        name: the step's name, e.g. ``"visual-average"``.
        apply: changes the model in place.
        record: what a run's log entry says about the step (e.g. ``{"stage": "average", "runs": 7}``).
    """

    name: str
    apply: ModelHook
    record: dict[str, Any] = field(default_factory=dict)


class PlanHooks:
    """What a caller of :meth:`MethodPlan.train` does around the plan's steps; here every hook does nothing. The
    application's runner subclasses it (logs each stage, checks its step cap, records its checkpoints' settings, scores
    dev after each step), so that the plan's steps are run by one loop, :meth:`MethodPlan.train`.

    Example::

        from sbert_nonling.methods.plan import PlanHooks

        class PrintSteps(PlanHooks):
            def after_step(self, step, output):
                print(step.name, output.global_step if output is not None else "weight update")

        # plan.train("runs/x", hooks=PrintSteps())
    """

    def before_step(self, step: TrainingStage | ModelUpdate) -> None:
        """Called as a step begins, before anything of it runs.

        Args:
            step: the training stage or weight update.
        """

    def before_training(self, stage: TrainingStage, trainer: NonLinguisticTrainer) -> None:
        """Called with a training stage's trainer, built (its loss too) and not yet trained; in a dry run, instead
        of training.

        Args:
            stage: the training stage.
            trainer: its trainer.
        """

    def after_step(self, step: TrainingStage | ModelUpdate, output: TrainOutput | None) -> None:
        """Called after a step ran: a training stage with what its ``train()`` returned, a weight update with None.
        Not called in a dry run.

        Args:
            step: the training stage or weight update.
            output: the stage's ``train()`` output, or None.
        """


@dataclass
class MethodPlan:
    """A method's pieces, built and not yet trained: the model, its training stages in order, the dev evaluator.

    :meth:`train` runs the steps in order: each :class:`TrainingStage` (:meth:`TrainingStage.run`: before hooks,
    trainer, after hooks) and each :class:`ModelUpdate`.

    Args:
        model: the model the stages train.
        stages: the steps in order: training stages and weight updates between them.
        evaluator: the STS dev evaluator every stage selects its best checkpoint on, or None.
        evaluations: scores of the trained model besides STS, by name (e.g. caption <-> image ``"retrieval"``).

    Example::

        import os
        from transformers import set_seed

        from sbert_nonling.configs import SimCSEConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_simcse

        config = SimCSEConfig(model="tiny:bert", max_steps=2, batch_size=8)  # offline: a tiny random BERT
        set_seed(config.seed)  # the loss heads are drawn when the plan is built
        text_file = os.environ["SBERT_NONLING_SHARED"] + "/data/corpus/wiki1m_for_simcse.first11913.txt"
        plan = build_simcse(config, DataSources(text_file=text_file))
        outputs = plan.train("runs/simcse")  # every stage in order; checkpoints in runs/simcse/checkpoints
        print({name: output.global_step for name, output in outputs.items()})  # {'train': 2}
        plan.model.save("runs/simcse/model")
    """

    model: SentenceTransformer
    stages: list[TrainingStage | ModelUpdate]
    evaluator: SentenceEvaluator | None = None
    evaluations: dict[str, Callable[[SentenceTransformer], dict[str, float]]] = field(default_factory=dict)

    def train(
        self,
        output_dir: str | Path | None = None,
        resume: bool = False,
        hooks: PlanHooks | None = None,
        dry_run: bool = False,
    ) -> dict[str, TrainOutput]:
        """Train the plan's model: run its steps in order, with ``hooks`` around them. Returns each training stage's
        ``train()`` output by name.

        Args:
            output_dir: the folder the stages write their checkpoints into, each in its own
                :meth:`TrainingStage.checkpoint_dir`; default: the working directory.
            resume: each stage continues from its newest intact checkpoint (a stage that has none starts).
            hooks: what the caller does around the steps (:class:`PlanHooks`).
            dry_run: build each stage's trainer and give it to ``hooks.before_training``, without training, running
                the stages' own hooks or updating weights (``output_dir``: where the trainers would write; building a
                trainer may create its folder, so a dry run is given a scratch folder).
        """
        hooks = hooks or PlanHooks()
        outputs = {}
        for step in self.stages:
            hooks.before_step(step)
            if dry_run:
                if isinstance(step, TrainingStage):
                    hooks.before_training(step, step.trainer(self.model, self.evaluator, output_dir))
                continue
            if isinstance(step, ModelUpdate):
                step.apply(self.model)
                hooks.after_step(step, None)
                continue
            start = functools.partial(hooks.before_training, step)
            outputs[step.name] = step.run(self.model, self.evaluator, output_dir, True if resume else None, start)
            hooks.after_step(step, outputs[step.name])
        return outputs
