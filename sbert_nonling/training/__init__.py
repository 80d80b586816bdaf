"""Training: trainers, callbacks, optimizers and samplers on top of sentence-transformers' trainer (the runners that
use them, recipes included, are the application layer, :mod:`sbert_nonling.app`).

Names are imported on first use (PEP 562), so importing one callback does not load every trainer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert_nonling.util.lazy_names import lazy_names

if TYPE_CHECKING:
    from sbert_nonling.training.checkpoint_marker import CheckpointMarkerCallback
    from sbert_nonling.training.finite_training import FiniteTrainingCallback, TrainingDiverged
    from sbert_nonling.training.loss_gradient_averaging import LossGradientAveragingCallback
    from sbert_nonling.training.loss_state import LossStateCallback
    from sbert_nonling.training.modality_optimizer import ModalityOptimizer
    from sbert_nonling.training.modality_schedule import ModalitySchedule
    from sbert_nonling.training.preemption import PreemptionCallback
    from sbert_nonling.training.reuse_identical_columns import ReuseIdenticalColumns
    from sbert_nonling.training.step_timer import StepTimerCallback
    from sbert_nonling.training.trainer import NonLinguisticTrainer
    from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler
    from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer

#: The module that defines each public name.
_LAZY = {
    "CheckpointMarkerCallback": "sbert_nonling.training.checkpoint_marker",
    "FiniteTrainingCallback": "sbert_nonling.training.finite_training",
    "TrainingDiverged": "sbert_nonling.training.finite_training",
    "LossGradientAveragingCallback": "sbert_nonling.training.loss_gradient_averaging",
    "LossStateCallback": "sbert_nonling.training.loss_state",
    "ModalityOptimizer": "sbert_nonling.training.modality_optimizer",
    "ModalitySchedule": "sbert_nonling.training.modality_schedule",
    "NonLinguisticTrainer": "sbert_nonling.training.trainer",
    "PreemptionCallback": "sbert_nonling.training.preemption",
    "ReuseIdenticalColumns": "sbert_nonling.training.reuse_identical_columns",
    "StepTimerCallback": "sbert_nonling.training.step_timer",
    "UnpairedBatchSampler": "sbert_nonling.training.unpaired_sampler",
    "UnpairedModalityTrainer": "sbert_nonling.training.unpaired_trainer",
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "CheckpointMarkerCallback",
    "FiniteTrainingCallback",
    "LossGradientAveragingCallback",
    "LossStateCallback",
    "ModalityOptimizer",
    "ModalitySchedule",
    "NonLinguisticTrainer",
    "PreemptionCallback",
    "ReuseIdenticalColumns",
    "StepTimerCallback",
    "TrainingDiverged",
    "UnpairedBatchSampler",
    "UnpairedModalityTrainer",
]
