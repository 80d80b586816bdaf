"""The application layer: a recipe run end to end (recipe -> typed config -> the method's builder -> the runner), on
top of the library (``training``, ``methods``, ``evaluation``, ``export``), which never imports it. Names are imported
on first use (PEP 562), so ``list_recipes`` (``sbert-nonling train --help``) loads no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert_nonling.util.lazy_names import lazy_names

if TYPE_CHECKING:
    from sbert_nonling.app.recipes import get_recipe, list_recipes, load_recipe
    from sbert_nonling.app.run_options import RunOptions
    from sbert_nonling.app.runner import run_method, train_recipe

#: The module of this package that defines each public name.
_LAZY = {
    "get_recipe": "recipes",
    "list_recipes": "recipes",
    "load_recipe": "recipes",
    "RunOptions": "run_options",
    "run_method": "runner",
    "train_recipe": "runner",
}

__getattr__, __dir__ = lazy_names(
    __name__, globals(), {name: f"{__name__}.{module}" for name, module in _LAZY.items()}
)

__all__ = ["RunOptions", "get_recipe", "list_recipes", "load_recipe", "run_method", "train_recipe"]
