from __future__ import annotations

from sbert_nonling.training.checkpoint_marker import CheckpointMarkerCallback
from sbert_nonling.training.loss_gradient_averaging import LossGradientAveragingCallback
from sbert_nonling.training.loss_state import LossStateCallback
from sbert_nonling.training.modality_optimizer import ModalityOptimizer
from sbert_nonling.training.multitask import train_multitask
from sbert_nonling.training.pixel_linguist import train_pixel_linguist
from sbert_nonling.training.preemption import PreemptionCallback
from sbert_nonling.training.recipes import get_recipe, list_recipes, load_recipe
from sbert_nonling.training.reuse_identical_columns import ReuseIdenticalColumns
from sbert_nonling.training.run import train_recipe
from sbert_nonling.training.step_timer import StepTimerCallback
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler
from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer

__all__ = [
    "CheckpointMarkerCallback",
    "LossGradientAveragingCallback",
    "LossStateCallback",
    "ModalityOptimizer",
    "NonLinguisticTrainer",
    "PreemptionCallback",
    "ReuseIdenticalColumns",
    "StepTimerCallback",
    "UnpairedBatchSampler",
    "UnpairedModalityTrainer",
    "get_recipe",
    "list_recipes",
    "load_recipe",
    "train_multitask",
    "train_pixel_linguist",
    "train_recipe",
]
