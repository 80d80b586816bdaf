"""Recipes load into their method's typed config; unknown keys and bad values in a file or an override are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest

from sbert_nonling.app.recipes import config_from_recipe, get_recipe, list_recipes, load_recipe
from sbert_nonling.configs import METHOD_CONFIGS, MACDConfig, VisualCSEConfig
from tests.conftest import cli_environment

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
def test_every_recipe_file_and_its_tiny_block_apply(name):
    recipe = _recipe_file(name)
    settings, tiny = get_recipe(name), get_recipe(name, tiny=True)
    for values, loaded in ((recipe, settings), (recipe.get("tiny", {}), tiny)):
        for key, value in values.items():
            if key in ("tiny", "tiny_note", "extends", "paper"):
                continue
            if isinstance(value, dict) and key != "tiny_encoder":  # a stage: the file's values, the others kept
                assert all(loaded[key][item] == setting for item, setting in value.items()), f"{name}: {key}"
            else:  # the dict the runners read keeps the file's values (and types) under the same keys
                assert loaded[key] == value and type(loaded[key]) is type(value), f"{name}: {key}"
    assert tiny["tiny"] and not settings["tiny"]
    # the machine decides precision and DataLoader workers (``auto``): no recipe fixes them
    assert (
        not {"precision", "dataloader_num_workers", "dataloader_pin_memory"} & set(recipe)
        and settings["precision"] == "auto"
    )


def test_overrides_are_typed_and_checked():
    config = load_recipe("visualcse", overrides={"learning_rate": 1, "images_per_class": 5})
    assert isinstance(config, VisualCSEConfig) and config.learning_rate == 1.0 and config.images_per_class == 5
    with pytest.raises(
        ValueError,
        match=r"overrides of recipe file visualcse.json: 'bogus' is not a setting of VisualCSEConfig"
        r".*valid settings: .*modality_learning_rate",
    ):
        load_recipe("visualcse", overrides={"bogus": 1})
    with pytest.raises(ValueError, match=r"'learning_rate' must be float, got 'abc'"):
        load_recipe("visualcse", overrides={"learning_rate": "abc"})
    with pytest.raises(ValueError, match=r"'tiny' is set by the tiny option"):
        load_recipe("visualcse", overrides={"tiny": True})


def test_a_recipe_file_with_an_unknown_key_or_a_bad_value_is_refused():
    recipe = _recipe_file("macd")
    assert isinstance(config_from_recipe(recipe, "macd.json"), MACDConfig)
    with pytest.raises(
        ValueError, match=r"my-recipe.json: 'anchor.weight' is not a setting of AnchorConfig.*kl_weight"
    ):
        config_from_recipe({**recipe, "anchor": {"weight": 5.0}}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"the tiny block of my-recipe.json: 'lr' is not a setting"):
        config_from_recipe({**recipe, "tiny": {"lr": 1e-4}}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"'warmup_steps' must be >= 0.0, got -1.0"):
        config_from_recipe({**recipe, "warmup_steps": -1}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"my-recipe.json: method 'macd2' is not one of"):
        config_from_recipe({**recipe, "method": "macd2"}, "my-recipe.json")
    with pytest.raises(ValueError, match=r'my-recipe.json: the "paper" block must be an object of'):
        config_from_recipe({**recipe, "paper": {"average": 75.0}}, "my-recipe.json")
    with pytest.raises(ValueError, match=r'my-recipe.json: name the method \("method": one of \[.*\]\) or the'):
        config_from_recipe({"name": "mine"}, "my-recipe.json")


def _differing(name: str, values: dict, base: dict) -> None:
    """Each of ``values`` (a block: each of its entries) differs from ``base``, else the recipe repeats it."""
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and key != "tiny_encoder":
            repeated = [item for item, setting in value.items() if base[key][item] == setting]
            assert value and not repeated, f"{name}: {key} repeats {repeated}"
        else:
            assert base[key] != value, f"{name}: {key} repeats {value!r}"


def test_a_recipe_file_holds_only_what_differs_from_its_config_or_the_recipe_it_extends():
    for name in list_recipes():
        recipe = _recipe_file(name)
        if "extends" in recipe:
            base = get_recipe(recipe["extends"])
        else:
            base = METHOD_CONFIGS[recipe["method"]]().to_dict()
        settings = {
            key: value
            for key, value in recipe.items()
            if key not in ("method", "extends", "name", "description", "reference", "paper", "tiny", "tiny_note")
        }
        _differing(name, settings, base)
        resolved = load_recipe(name)
        tiny_block = recipe.get("tiny", {})
        # a tiny block repeats neither the config's tiny defaults, nor the recipe's own settings, nor (for a recipe
        # that extends another) what the extended recipe's tiny block sets
        defaults = resolved.replace(source="test", **type(resolved).tiny_defaults).to_dict()
        _differing(f"{name} (tiny)", {key: value for key, value in tiny_block.items() if key in settings}, defaults)
        if "extends" in recipe:
            own = {key: value for key, value in tiny_block.items() if key not in settings}
            _differing(f"{name} (tiny)", own, get_recipe(recipe["extends"], tiny=True))
        else:
            _differing(f"{name} (tiny)", tiny_block, defaults)


def test_a_recipe_extends_another_and_its_run_records_every_setting():
    fast, visualcse = get_recipe("visualcse-fast"), get_recipe("visualcse")
    assert (fast["name"], fast["image_size"], fast["token_keep_ratio"]) == ("visualcse-fast", 112, 0.25)
    changed = {key for key in visualcse if fast[key] != visualcse[key]}
    assert changed == {"name", "description", "image_size", "token_keep_ratio"}
    # the tiny block of the extended recipe applies first, then the recipe's own
    large = get_recipe("visualcse-roberta-large", tiny=True)
    assert (large["model"], large["image_size"], large["batch_size"], large["modality_weight"]) == (
        "tiny:bert",
        32,
        64,
        0.2,
    )
    coco = get_recipe("mcse-coco")
    assert {key: value for key, value in coco.items() if key not in DOCUMENTATION} == {
        key: value for key, value in get_recipe("mcse").items() if key not in DOCUMENTATION
    }
    with pytest.raises(ValueError, match=r"my-recipe.json: 'img_sise' is not a setting of VisualCSEConfig"):
        config_from_recipe({"extends": "visualcse", "img_sise": 64}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"my-recipe.json: method 'mcse' is not 'visualcse', the extended recipe's"):
        config_from_recipe({"extends": "visualcse", "method": "mcse"}, "my-recipe.json")
    with pytest.raises(ValueError, match=r"Unknown recipe 'visualcse-slow' \(closest: 'visualcse-fast'"):
        config_from_recipe({"extends": "visualcse-slow"}, "my-recipe.json")


def test_no_two_recipes_hold_the_same_tiny_block():
    recipes = [_recipe_file(name) for name in list_recipes()]
    blocks = [json.dumps(recipe["tiny"], sort_keys=True) for recipe in recipes if "tiny" in recipe]
    assert len(blocks) == len(set(blocks))


def test_an_unknown_recipe_names_the_closest_and_every_recipe():
    with pytest.raises(ValueError) as raised:
        load_recipe("simcse-unsupp")
    assert (
        str(raised.value) == "Unknown recipe 'simcse-unsupp' (closest: 'simcse-unsup', 'simcse-sup'); "
        f"recipes: {', '.join(list_recipes())}."
    )


def test_loading_and_validating_every_recipe_imports_no_torch():
    """The CLI checks a recipe and its --set overrides before it loads the heavy libraries (sbert-nonling train)."""
    script = (
        "import sys\n"
        "from sbert_nonling.app.recipes import list_recipes, load_recipe\n"
        "for name in list_recipes():\n"
        "    load_recipe(name, tiny=True, overrides={'seed': 1}).describe()\n"
        "heavy = ('torch', 'transformers', 'sentence_transformers', 'datasets')\n"
        "print('imported:', [name for name in heavy if name in sys.modules])\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=cli_environment()
    ).stdout
    assert output.splitlines()[-1] == "imported: []"


def test_a_configs_tiny_defaults_apply_before_the_recipes_tiny_block():
    defaults = METHOD_CONFIGS["simcse"].tiny_defaults
    assert defaults == {
        "model": "tiny:bert",
        "pooling": "mean",
        "learning_rate": 1e-4,
        "eval_steps": 50,
        "max_steps": 200,
    }
    unsupervised, paper = get_recipe("simcse-unsup", tiny=True), get_recipe("simcse-unsup")
    assert {key: unsupervised[key] for key in defaults} == defaults != {key: paper[key] for key in defaults}
    supervised = get_recipe("simcse-sup", tiny=True)  # its tiny block keeps its own pooling
    assert (supervised["pooling"], supervised["learning_rate"]) == ("cls_mlp", 1e-4)
    macd = get_recipe("macd", tiny=True)
    assert (macd["pooling"], macd["eval_steps"], macd["max_steps"]) == ("mean", 25, 100)
    assert get_recipe("pixel-linguist", tiny=True)["eval_steps"] == 20  # a config without tiny defaults


def test_a_recipe_file_of_one_s_own_loads_like_a_bundled_one_and_is_refused_in_one_sentence(tmp_path):
    from sbert_nonling.app.recipes import is_recipe_file, paper_result, recipe_name

    recipe = tmp_path / "fast-macd.json"
    recipe.write_text(json.dumps({"extends": "macd", "learning_rate": 2e-4, "paper": {"average": 1, "source": "T1"}}))
    config = load_recipe(str(recipe), overrides={"seed": 7})
    assert isinstance(config, MACDConfig) and (config.learning_rate, config.seed) == (2e-4, 7)
    assert get_recipe(str(recipe))["learning_rate"] == 2e-4 and paper_result(str(recipe)).average == 1.0
    assert is_recipe_file(str(recipe)) and recipe_name(str(recipe)) == "fast-macd" and recipe_name("macd") == "macd"
    for contents, message in (
        ("{", r"Recipe file '.*broken.json' is not JSON: Expecting property name"),
        ("[1]", r"Recipe file '.*broken.json' must hold one JSON object \(its settings\), got \[1\]"),
        ('{"method": "macd", "import": 3}', r'broken.json: "import" names a module, e.g. "my_package.my_method"'),
        ('{"method": "macd", "import": "not_a_module"}', r"names the module 'not_a_module', which cannot be"),
    ):
        (tmp_path / "broken.json").write_text(contents)
        with pytest.raises(ValueError, match=message):
            load_recipe(str(tmp_path / "broken.json"))
    with pytest.raises(ValueError, match=r"Recipe file 'missing.json' does not exist"):
        load_recipe("missing.json")


def test_a_recipe_s_import_finds_the_module_beside_the_recipe_file_and_leaves_the_path_as_it_was(
    tmp_path, monkeypatch
):
    from sbert_nonling.configs import registry

    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    (tmp_path / "beside_recipe.py").write_text(
        "from sbert_nonling.configs import MethodSpec, MultitaskConfig, register_method\n\n"
        "class BesideConfig(MultitaskConfig):\n    method = 'beside-recipe'\n\n"
        "register_method(MethodSpec(BesideConfig, 'sbert_nonling.methods:build_multitask', ('nli_file',)))\n"
    )
    (tmp_path / "beside.json").write_text(json.dumps({"import": "beside_recipe", "method": "beside-recipe"}))
    path = list(sys.path)
    try:
        assert type(load_recipe(str(tmp_path / "beside.json"))).__name__ == "BesideConfig" and sys.path == path
    finally:
        sys.modules.pop("beside_recipe", None)
