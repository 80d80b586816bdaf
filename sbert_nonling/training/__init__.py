from __future__ import annotations

from sbert_nonling.training.modality_optimizer import ModalityOptimizer
from sbert_nonling.training.multitask import train_multitask
from sbert_nonling.training.pixel_linguist import train_pixel_linguist
from sbert_nonling.training.recipes import get_recipe, list_recipes, load_recipe
from sbert_nonling.training.run import train_recipe
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
    "train_multitask",
    "train_pixel_linguist",
    "train_recipe",
]
