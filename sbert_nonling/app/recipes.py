"""Recipes: one JSON file per published configuration (``sbert_nonling/recipes/<name>.json``), or a recipe file of
your own (a path ending in ``.json``), loaded into the method's typed config (:mod:`sbert_nonling.configs`, imported on
loading, so :func:`list_recipes` loads no torch)."""

from __future__ import annotations

import difflib
import importlib
import json
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sbert_nonling.configs import MethodConfig
    from sbert_nonling.evaluation.paper_results import PaperResult

#: Keys of a recipe file that are not settings: the tiny override block and its note.
TINY_BLOCK, TINY_NOTE = "tiny", "tiny_note"
#: The key of a recipe file that names the bundled recipe it starts from.
EXTENDS = "extends"
#: The key of a recipe file that holds what its paper reports for its setting (not inherited by a recipe extending it).
PAPER = "paper"
#: The key of a recipe file that names the module registering its method (a method of your own), imported first.
IMPORT = "import"
#: The keys of a recipe file that are not settings of its method's config.
NOT_SETTINGS = ("method", EXTENDS, IMPORT, TINY_BLOCK, TINY_NOTE, PAPER)


def list_recipes() -> list[str]:
    """Names of the bundled recipes, e.g. ``["simcse-sup", "simcse-unsup"]``."""
    files = resources.files("sbert_nonling") / "recipes"
    return sorted(entry.name.removesuffix(".json") for entry in files.iterdir() if entry.name.endswith(".json"))


def is_recipe_file(recipe: str) -> bool:
    """Whether ``recipe`` is the path of a recipe file of your own (it ends in ``.json``), not a bundled recipe's name.

    Args:
        recipe: a bundled recipe's name or a recipe file's path.
    """
    return recipe.endswith(".json")


def recipe_name(recipe: str) -> str:
    """The name a recipe's runs go by (``reproduce``'s folders and rows): a bundled recipe's name, or a recipe file's
    name without its folder and ``.json`` (``runs/warm-simcse.json`` -> ``warm-simcse``).

    Args:
        recipe: a bundled recipe's name or a recipe file's path.
    """
    return Path(recipe).stem if is_recipe_file(recipe) else recipe


def read_recipe(name: str) -> dict[str, Any]:
    """The contents of a recipe file, as written: its own settings, ``"extends"`` if it starts from another recipe:
    the bundled recipe ``name`` (``sbert_nonling/recipes/<name>.json``) or, for a path ending in ``.json``, that file.
    An unknown name raises a ValueError naming the closest; a file that is missing or not a JSON object, one naming it.

    Args:
        name: the recipe name, e.g. ``"visualcse-fast"``, or a recipe file, e.g. ``"my-recipe.json"``.
    """
    if is_recipe_file(name):
        path = Path(name)
        if not path.is_file():
            raise ValueError(f"Recipe file {name!r} does not exist (a bundled recipe is named without .json).")
        try:
            contents = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"Recipe file {name!r} is not JSON: {error}.") from None
        if not isinstance(contents, dict):
            raise ValueError(f"Recipe file {name!r} must hold one JSON object (its settings), got {contents!r}.")
        return contents
    available = list_recipes()
    if name not in available:
        close = difflib.get_close_matches(name, available, n=3)
        closest = f" (closest: {', '.join(repr(recipe) for recipe in close)})" if close else ""
        raise ValueError(f"Unknown recipe {name!r}{closest}; recipes: {', '.join(available)}.")
    return json.loads((resources.files("sbert_nonling") / "recipes" / f"{name}.json").read_text(encoding="utf-8"))


def load_recipe(name: str, tiny: bool = False, overrides: dict[str, Any] | None = None) -> MethodConfig:
    """Recipe ``name`` as its method's typed config: the file's settings (on top of the recipe it ``"extends"``, if
    any), then, if ``tiny`` is set, the config's ``tiny_defaults`` and the recipe's ``tiny`` block (a named override
    block: a small offline encoder and the settings that go with it), then ``overrides`` (e.g. from ``--set
    key=value``). An unknown key, a value of the wrong type or out of range, in the file or in the overrides, raises a
    ValueError naming the key and listing the valid settings. A recipe file of your own may name the module that
    registers its method (``"import"``: :func:`config_from_recipe`).

    Args:
        name: a bundled recipe (:func:`list_recipes`) or a recipe file (a path ending in ``.json``).
        tiny: apply the config's tiny defaults and the recipe's tiny block (a small random encoder that trains offline
            on a CPU).
        overrides: settings to change last; a block's setting as a dotted key (``{"grounding.weight": 1.0}``).

    Example::

        from sbert_nonling.app import load_recipe

        config = load_recipe("visualcse", overrides={"learning_rate": 1e-5})  # a VisualCSEConfig
        print(config.modality_learning_rate)  # 1e-06, the paper's image AdamW rate
    """
    folder = Path(name).parent if is_recipe_file(name) else None
    return config_from_recipe(read_recipe(name), _source(name), tiny=tiny, overrides=overrides, folder=folder)


def _source(recipe: str) -> str:
    """How error messages name a recipe: ``recipe file <name>.json``, or a recipe file's path."""
    return f"recipe file {recipe}" if is_recipe_file(recipe) else f"recipe file {recipe}.json"


def _recipe_chain(recipe: dict[str, Any], source: str) -> list[tuple[dict[str, Any], str]]:
    """The recipes ``recipe`` builds on, the one it extends first and ``recipe`` last, each with its source."""
    chain = [(recipe, source)]
    seen: list[str] = []
    while EXTENDS in chain[0][0]:
        parent = chain[0][0][EXTENDS]
        if parent in seen:
            raise ValueError(f"{source}: the recipes it extends form a loop: {' -> '.join([*seen, parent])}.")
        seen.append(parent)
        chain.insert(0, (read_recipe(parent), _source(parent)))
    return chain


def config_from_recipe(
    recipe: dict[str, Any],
    source: str,
    tiny: bool = False,
    overrides: dict[str, Any] | None = None,
    folder: str | Path | None = None,
) -> MethodConfig:
    """The typed config of a recipe's contents, as :func:`load_recipe` builds it. A recipe holds ``"method"`` (or
    ``"extends"``: the name of a bundled recipe whose settings and tiny block it starts from), its settings (a block
    as a dict of what differs, ``"grounding": {"weight": 1.0}``), an optional ``"tiny"`` block and ``"tiny_note"``,
    optionally what its paper reports (``"paper"``: :func:`paper_result`), checked here, and, for a method of your own,
    the module that registers it (``"import": "my_package.my_method"``: imported first, from the Python path or
    ``folder``; docs/adding_a_method.md).

    Args:
        recipe: the recipe's contents (a recipe JSON, read).
        source: how error messages name the recipe (``"my-recipe.json"``).
        tiny: apply the config's tiny defaults, then the tiny blocks (the extended recipe's first, then this one's).
        overrides: settings to change last, as ``--set`` gives them.
        folder: the recipe file's folder, where ``"import"`` also looks for the module (None: the Python path only).
    """
    from sbert_nonling.configs.registry import get_method, list_methods
    from sbert_nonling.evaluation.paper_results import PaperResult

    chain = _recipe_chain(recipe, source)
    for link, link_source in chain:
        if IMPORT in link:
            import_method_module(link[IMPORT], link_source, folder)
    method = chain[0][0].get("method")  # the recipe at the root of the chain names the method
    if not isinstance(method, str):
        raise ValueError(
            f'{chain[0][1]}: name the method ("method": one of {list_methods()}) or the bundled recipe it starts from '
            '("extends").'
        )
    try:
        spec = get_method(method)
    except ValueError as error:
        raise ValueError(f"{chain[0][1]}: {error}") from None
    for link, link_source in chain[1:]:
        if link.get("method", method) != method:
            raise ValueError(f"{link_source}: method {link['method']!r} is not {method!r}, the extended recipe's.")
    config = spec.config()
    for link, link_source in chain:
        settings = {key: value for key, value in link.items() if key not in NOT_SETTINGS}
        config = config.replace(source=link_source, **settings)
        type(config).check_keys(link.get(TINY_BLOCK, {}), source=f"the tiny block of {link_source}")
        if PAPER in link:
            PaperResult.from_dict(link[PAPER], link_source)
    if tiny:
        defaults = type(config).tiny_defaults
        config = config.replace(source=f"the tiny defaults of {type(config).__name__}", **defaults)
        for link, link_source in chain:
            config = config.replace(source=f"the tiny block of {link_source}", **link.get(TINY_BLOCK, {}))
        config = config.replace(source=f"the tiny block of {source}", tiny=True)
    overrides = overrides or {}
    if "tiny" in overrides:
        raise ValueError(f"overrides of {source}: 'tiny' is set by the tiny option (--tiny), not overridden.")
    return config.replace(source=f"overrides of {source}", **overrides)


def import_method_module(module: Any, source: str, folder: str | Path | None = None) -> None:
    """Import the module a recipe's ``"import"`` key names, whose import registers the recipe's method
    (:func:`~sbert_nonling.configs.register_method`): from the Python path, or from ``folder`` (the recipe file's, as
    ``python script.py`` finds a module beside the script). A module that cannot be found raises a ValueError naming
    it.

    Args:
        module: the module's dotted name, e.g. ``"my_package.my_method"``.
        source: how the error names the recipe.
        folder: a folder searched first (None: the Python path only).
    """
    if not isinstance(module, str):
        raise ValueError(f'{source}: "import" names a module, e.g. "my_package.my_method", got {module!r}.')
    searched = [str(folder)] if folder is not None else []
    sys.path[:0] = searched
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as error:
        raise ValueError(
            f'{source}: "import" names the module {module!r}, which cannot be imported ({error}); install its package '
            "(pip install -e .), put its folder on PYTHONPATH, or put it beside the recipe file."
        ) from error
    finally:
        for entry in searched:
            sys.path.remove(entry)


def paper_result(name: str) -> PaperResult | None:
    """What the paper reports for the setting of recipe ``name``: its file's ``"paper"`` block (the average over the 7
    STS test sets, per-task values where known, the source of every number), or None where the recipe has none (a
    recipe that extends another does not inherit its values: it changes the setting).

    Args:
        name: a bundled recipe (:func:`list_recipes`) or a recipe file.

    Example::

        from sbert_nonling.app.recipes import paper_result

        print(paper_result("simcse-unsup").average, paper_result("visualcse-fast"))  # 76.25 None
    """
    from sbert_nonling.evaluation.paper_results import PaperResult

    recipe = read_recipe(name)
    return PaperResult.from_dict(recipe[PAPER], _source(name)) if PAPER in recipe else None


def get_recipe(name: str, tiny: bool = False, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings of recipe ``name`` as a plain dict (:func:`load_recipe`'s config, ``to_dict()``), complete (the
    settings of the recipe it extends included), as the runners read them and ``recipe.json`` records them.

    Args:
        name: a bundled recipe (:func:`list_recipes`) or a recipe file.
        tiny: apply the recipe's tiny block.
        overrides: settings to change last.
    """
    return load_recipe(name, tiny=tiny, overrides=overrides).to_dict()


def recipe_config(
    recipe: str, overrides: dict[str, Any] | None = None, tiny: bool = False, max_steps: int | None = None
) -> MethodConfig:
    """The settings a run of ``recipe`` trains with, as :func:`~sbert_nonling.app.runner.train_recipe` resolves them:
    the recipe file, its tiny block (``tiny``), the ``overrides``, the ``max_steps`` cap (of the run, or of each stage
    run), and a continued sentence-transformers model's own modules kept unless overridden. A ValueError names a bad
    setting or flag.

    Args:
        recipe: a name from :func:`~sbert_nonling.app.recipes.list_recipes`, or a recipe file of your own (a path
            ending in ``.json``: docs/adding_a_method.md).
        overrides: recipe settings (``--set`` and the flags that set one, e.g. ``{"model": ...}``).
        tiny: a small random encoder built offline, with the recipe's ``tiny`` settings; not with a ``model`` override.
        max_steps: stop after this many optimizer steps (of each stage run); at least 1.

    Example::

        from sbert_nonling.app.recipes import recipe_config

        print(recipe_config("simcse-unsup", tiny=True, max_steps=8).max_steps)  # 8
    """
    from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig

    overrides = overrides or {}
    if max_steps is not None and max_steps < 1:
        raise ValueError(
            f"--max-steps (max_steps) must be at least 1, got {max_steps}; leave it out to train the recipe's full "
            "run."
        )
    if tiny and "model" in overrides:
        raise ValueError(
            "Pass either --tiny (tiny=True: a locally built encoder) or --model (a model override), not both."
        )
    config = load_recipe(recipe, tiny=tiny, overrides=overrides)
    if max_steps is not None:  # of the run, or of each stage run (a stage left out stays left out)
        stages = config.stages()
        capped = (
            {name: stage.capped(max_steps) for name, stage in stages.items()} if stages else {"max_steps": max_steps}
        )
        config = config.replace("the max_steps option", **capped)
    if isinstance(config, SentenceEncoderConfig):  # a sentence-transformers model keeps what is not set explicitly
        kept = [name for name in config.keep_model_modules if name not in overrides]
        config = config.replace("the overrides", keep_model_modules=kept)
    return config
