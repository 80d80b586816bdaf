from __future__ import annotations

from typing import Any

from sbert_nonling.training.checkpoint_marker import CheckpointMarkerCallback
from sbert_nonling.training.finite_training import FiniteTrainingCallback, TrainingDiverged
from sbert_nonling.training.loss_gradient_averaging import LossGradientAveragingCallback
from sbert_nonling.training.loss_state import LossStateCallback
from sbert_nonling.training.modality_optimizer import ModalityOptimizer
from sbert_nonling.training.preemption import PreemptionCallback
from sbert_nonling.training.recipes import get_recipe, list_recipes, load_recipe
from sbert_nonling.training.reuse_identical_columns import ReuseIdenticalColumns
from sbert_nonling.training.step_timer import StepTimerCallback
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler
from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer

#: The runners sit on top of sbert_nonling.methods, whose builders use this package's trainers: imported on first use.
_RUNNERS = {"run_method": "sbert_nonling.training.runner", "train_recipe": "sbert_nonling.training.run"}


def __getattr__(name: str) -> Any:
    if name in _RUNNERS:
        import importlib

        return getattr(importlib.import_module(_RUNNERS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CheckpointMarkerCallback",
    "FiniteTrainingCallback",
    "LossGradientAveragingCallback",
    "LossStateCallback",
    "ModalityOptimizer",
    "NonLinguisticTrainer",
    "PreemptionCallback",
    "ReuseIdenticalColumns",
    "StepTimerCallback",
    "TrainingDiverged",
    "UnpairedBatchSampler",
    "UnpairedModalityTrainer",
    "get_recipe",
    "list_recipes",
    "load_recipe",
    "run_method",
    "train_recipe",
]
