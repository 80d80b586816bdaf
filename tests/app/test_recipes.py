"""Recipes load into their method's typed config; unknown keys and bad values in a file or an override are refused."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from sbert_nonling.app.recipes import config_from_recipe, get_recipe, list_recipes, load_recipe
from sbert_nonling.configs import METHOD_CONFIGS, MACDConfig, VisualCSEConfig

#: The recipe holding each method's paper row (the config's defaults).
PAPER_ROWS = {
    "simcse": "simcse-unsup",
    "visualcse": "visualcse",
    "audiocse": "audiocse",
    "mcse": "mcse",
    "macd": "macd",
    "multitask": "multitask",
    "pixel_linguist": "pixel-linguist",
}
DOCUMENTATION = ("name", "description", "reference")


def _recipe_file(name: str) -> dict:
    return json.loads((resources.files("sbert_nonling") / "recipes" / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("method", sorted(PAPER_ROWS))
def test_each_config_defaults_to_its_paper_recipe(method):
    config = load_recipe(PAPER_ROWS[method])
    assert type(config) is METHOD_CONFIGS[method]
    paper = {key: value for key, value in config.to_dict().items() if key not in DOCUMENTATION}
    defaults = {key: value for key, value in type(config)().to_dict().items() if key not in DOCUMENTATION}
    assert paper == defaults


@pytest.mark.parametrize("name", list_recipes())
def test_every_recipe_file_sets_every_setting_of_its_method_and_its_tiny_block_applies(name):
    recipe = _recipe_file(name)
    config_class = METHOD_CONFIGS[recipe["method"]]
    # the machine decides precision and DataLoader workers (``auto``): no recipe fixes them
    machine = {"precision", "dataloader_num_workers", "dataloader_pin_memory"}
    assert set(recipe) - {"method", "tiny", "tiny_note"} == set(config_class.field_names()) - machine - {"tiny"}
    tiny = load_recipe(name, tiny=True)
    assert tiny.tiny and all(getattr(tiny, key) == value for key, value in recipe["tiny"].items())
    # the dict the runners read keeps the file's values (and types) under the same keys
    settings = get_recipe(name)
    assert all(settings[key] == value and type(settings[key]) is type(value) for key, value in recipe.items() if key not in ("tiny", "tiny_note"))


def test_overrides_are_typed_and_checked():
    config = load_recipe("visualcse", overrides={"learning_rate": 1, "images_per_class": 5})
    assert isinstance(config, VisualCSEConfig) and config.learning_rate == 1.0 and config.images_per_class == 5
    with pytest.raises(
        ValueError,
        match=r"overrides of recipe file visualcse.json: 'bogus' is not a setting of VisualCSEConfig.*valid settings: .*modality_learning_rate",
    ):
        load_recipe("visualcse", overrides={"bogus": 1})
    with pytest.raises(ValueError, match=r"'learning_rate' must be float, got 'abc'"):
        load_recipe("visualcse", overrides={"learning_rate": "abc"})
    with pytest.raises(ValueError, match=r"'tiny' is set by the tiny option"):
        load_recipe("visualcse", overrides={"tiny": True})


def test_a_recipe_file_with_an_unknown_key_or_a_bad_value_is_refused():
    recipe = _recipe_file("macd")
    assert isinstance(config_from_recipe(recipe, "macd.json"), MACDConfig)
    with pytest.raises(ValueError, match=r"my-recipe.json: 'anchor_weight' is not a setting of MACDConfig .*anchor_kl_weight"):
        config_from_recipe({**recipe, "anchor_weight": 5.0}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"the tiny block of my-recipe.json: 'lr' is not a setting"):
        config_from_recipe({**recipe, "tiny": {"lr": 1e-4}}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"'warmup_fraction' must be >= 0.0 and <= 1.0, got 10.0"):
        config_from_recipe({**recipe, "warmup_fraction": 10}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"my-recipe.json: method 'macd2' is not one of"):
        config_from_recipe({**recipe, "method": "macd2"}, "my-recipe.json")
