"""Recipes: one JSON file per published configuration (``sbert_nonling/recipes/<name>.json``)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def list_recipes() -> list[str]:
    """Names of the bundled recipes, e.g. ``["simcse-sup", "simcse-unsup"]``."""
    files = resources.files("sbert_nonling") / "recipes"
    return sorted(entry.name.removesuffix(".json") for entry in files.iterdir() if entry.name.endswith(".json"))


def get_recipe(name: str, tiny: bool = False, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The hyper-parameters of recipe ``name`` (paper defaults), with its ``tiny`` block applied if ``tiny`` is set
    and then ``overrides`` (keys must exist in the recipe)."""
    available = list_recipes()
    if name not in available:
        raise ValueError(f"Unknown recipe {name!r}; available recipes: {available}.")
    recipe = json.loads((resources.files("sbert_nonling") / "recipes" / f"{name}.json").read_text(encoding="utf-8"))
    tiny_overrides = recipe.pop("tiny", {})
    recipe.pop("tiny_note", None)
    if tiny:
        recipe.update(tiny_overrides)
    for key, value in (overrides or {}).items():
        if key not in recipe:
            raise ValueError(f"Recipe {name!r} has no setting {key!r}; settings: {sorted(recipe)}.")
        recipe[key] = value
    recipe["tiny"] = tiny
    return recipe
