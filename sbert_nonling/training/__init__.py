from __future__ import annotations

from sbert_nonling.training.modality_optimizer import ModalityOptimizer
from sbert_nonling.training.recipes import get_recipe, list_recipes, load_recipe
from sbert_nonling.training.run import train_recipe
from sbert_nonling.training.runner import run_method
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.unpaired_sampler import UnpairedBatchSampler
from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer

__all__ = [
    "ModalityOptimizer",
    "NonLinguisticTrainer",
    "UnpairedBatchSampler",
    "UnpairedModalityTrainer",
    "get_recipe",
    "list_recipes",
    "load_recipe",
    "run_method",
    "train_recipe",
]
