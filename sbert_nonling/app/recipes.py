"""Recipes: one JSON file per published configuration (``sbert_nonling/recipes/<name>.json``), loaded into the
method's typed config (:mod:`sbert_nonling.configs`, imported on loading, so :func:`list_recipes` loads no torch)."""

from __future__ import annotations

import difflib
import json
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sbert_nonling.configs import MethodConfig

#: Keys of a recipe file that are not settings: the tiny override block and its note.
TINY_BLOCK, TINY_NOTE = "tiny", "tiny_note"


def list_recipes() -> list[str]:
    """Names of the bundled recipes, e.g. ``["simcse-sup", "simcse-unsup"]``."""
    files = resources.files("sbert_nonling") / "recipes"
    return sorted(entry.name.removesuffix(".json") for entry in files.iterdir() if entry.name.endswith(".json"))


def load_recipe(name: str, tiny: bool = False, overrides: dict[str, Any] | None = None) -> MethodConfig:
    """Recipe ``name`` as its method's typed config: the file's settings, then its ``tiny`` block if ``tiny`` is set
    (a named override block: a small offline encoder and the settings that go with it), then ``overrides`` (e.g. from
    ``--set key=value``). An unknown key, a value of the wrong type or out of range, in the file or in the overrides,
    raises a ValueError naming the key and listing the valid settings.

    Example::

        from sbert_nonling.app import load_recipe

        config = load_recipe("visualcse", overrides={"learning_rate": 1e-5})  # a VisualCSEConfig
        print(config.modality_learning_rate)  # 1e-06, the paper's image AdamW rate
    """
    available = list_recipes()
    if name not in available:
        close = difflib.get_close_matches(name, available, n=3)
        closest = f" (closest: {', '.join(repr(recipe) for recipe in close)})" if close else ""
        raise ValueError(f"Unknown recipe {name!r}{closest}; recipes: {', '.join(available)}.")
    recipe = json.loads((resources.files("sbert_nonling") / "recipes" / f"{name}.json").read_text(encoding="utf-8"))
    return config_from_recipe(recipe, f"recipe file {name}.json", tiny=tiny, overrides=overrides)


def config_from_recipe(
    recipe: dict[str, Any], source: str, tiny: bool = False, overrides: dict[str, Any] | None = None
) -> MethodConfig:
    """The typed config of a recipe's contents (``"method"``, settings, optional ``"tiny"`` block and ``"tiny_note"``),
    as :func:`load_recipe` builds it; ``source`` names the recipe in error messages."""
    from sbert_nonling.configs import METHOD_CONFIGS

    recipe = dict(recipe)
    method = recipe.pop("method", None)
    if method not in METHOD_CONFIGS:
        raise ValueError(f"{source}: method {method!r} is not one of {sorted(METHOD_CONFIGS)}.")
    config_class = METHOD_CONFIGS[method]
    tiny_block = recipe.pop(TINY_BLOCK, {})
    recipe.pop(TINY_NOTE, None)
    config = config_class.from_dict(recipe, source=source)
    config_class.check_keys(tiny_block, source=f"the tiny block of {source}")
    if tiny:
        config = config.replace(source=f"the tiny block of {source}", **{**tiny_block, "tiny": True})
    overrides = overrides or {}
    if "tiny" in overrides:
        raise ValueError(f"overrides of {source}: 'tiny' is set by the tiny option (--tiny), not overridden.")
    return config.replace(source=f"overrides of {source}", **overrides)


def get_recipe(name: str, tiny: bool = False, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings of recipe ``name`` as a plain dict (:func:`load_recipe`'s config, ``to_dict()``), as the runners
    read them and ``recipe.json`` records them."""
    return load_recipe(name, tiny=tiny, overrides=overrides).to_dict()
