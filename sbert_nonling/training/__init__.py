"""Training: trainers, callbacks, optimizers and samplers on top of sentence-transformers' (runners:
:mod:`sbert_nonling.app`)."""

from __future__ import annotations

from sbert_nonling.training.checkpoint_marker import CheckpointMarkerCallback
from sbert_nonling.training.continuous_epochs import ContinuousEpochsBatchSampler, ContinuousEpochsTrainer
from sbert_nonling.training.finite_training import FiniteTrainingCallback, TrainingDiverged
from sbert_nonling.training.loss_gradient_averaging import LossGradientAveragingCallback
from sbert_nonling.training.loss_state import LossStateCallback
from sbert_nonling.training.modality_optimizer import ModalityOptimizer, ModalitySchedule
from sbert_nonling.training.preemption import PreemptionCallback
from sbert_nonling.training.reuse_identical_columns import ReuseIdenticalColumns
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.training_args import NonLinguisticTrainingArguments
from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler
from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer

__all__ = [
    "CheckpointMarkerCallback",
    "ContinuousEpochsBatchSampler",
    "ContinuousEpochsTrainer",
    "FiniteTrainingCallback",
    "LossGradientAveragingCallback",
    "LossStateCallback",
    "ModalityOptimizer",
    "ModalitySchedule",
    "NonLinguisticTrainer",
    "NonLinguisticTrainingArguments",
    "PreemptionCallback",
    "ReuseIdenticalColumns",
    "TrainingDiverged",
    "UnpairedBatchSampler",
    "UnpairedModalityTrainer",
]
