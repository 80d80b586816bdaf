"""Method builders: each turns a method's typed config, its data and a starting model into the pieces of an ordinary
sentence-transformers training (model, datasets, losses, evaluator, trainer class and arguments) as a
:class:`MethodPlan` of one or more :class:`TrainingStage` s, without writing or evaluating anything. Run a plan with
your own trainer calls, or with :func:`~sbert_nonling.app.runner.run_method` (dev scores, saving, export,
run record)."""

from __future__ import annotations

from sbert_nonling.methods.grounding import build_grounding
from sbert_nonling.methods.multitask import build_multitask, task_losses
from sbert_nonling.methods.pixel_linguist import WeightAverage, build_pixel_linguist
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, TrainingStage
from sbert_nonling.methods.simcse import build_simcse
from sbert_nonling.methods.unpaired_modality import build_unpaired_modality

__all__ = [
    "MethodPlan",
    "ModelUpdate",
    "TrainingStage",
    "WeightAverage",
    "build_grounding",
    "build_multitask",
    "build_pixel_linguist",
    "build_simcse",
    "build_unpaired_modality",
    "task_losses",
]
