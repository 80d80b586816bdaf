"""The application layer: a recipe run end to end (recipe -> typed config -> the method's builder -> the runner: dev
scores, training, save, export, run record). It sits on top of the library (``training``, ``methods``, ``evaluation``,
``export``), which never imports it.

Names are imported on first use (PEP 562), like the package's: ``from sbert_nonling.app import train_recipe``;
``list_recipes`` (and ``sbert-nonling train --help``, which lists the recipes) reads the recipe files without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert_nonling.util.lazy_names import lazy_names

if TYPE_CHECKING:
    from sbert_nonling.app.recipes import get_recipe, list_recipes, load_recipe
    from sbert_nonling.app.run import train_recipe
    from sbert_nonling.app.runner import run_method

#: The module that defines each public name.
_LAZY = {
    "get_recipe": "sbert_nonling.app.recipes",
    "list_recipes": "sbert_nonling.app.recipes",
    "load_recipe": "sbert_nonling.app.recipes",
    "run_method": "sbert_nonling.app.runner",
    "train_recipe": "sbert_nonling.app.run",
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = ["get_recipe", "list_recipes", "load_recipe", "run_method", "train_recipe"]
