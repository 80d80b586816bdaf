from __future__ import annotations

from sbert_nonling.training.recipes import get_recipe, list_recipes
from sbert_nonling.training.run import train_recipe

__all__ = ["get_recipe", "list_recipes", "train_recipe"]
