"""What a recipe run leaves beside its model: the settings, the results and model cards for every saved form."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sbert_nonling.app.recipes import get_recipe, list_recipes
from sbert_nonling.export.model_card import CardForm, recorded_card_data, write_model_card

#: The score tables of a card: result key -> row label.
DEV_ROWS = {"dev_before": "dev, before training", "dev_after": "dev, after training"}
MULTILINGUAL_ROWS = {"multilingual_before": "dev, before training", "multilingual_after": "dev, after training"}


def write_run_record(
    output_dir: str | Path,
    settings: Mapping[str, Any],
    result: Mapping[str, Any],
    forms: Mapping[str, CardForm],
    data: list[str],
    citations: Sequence[str] = (),
) -> None:
    """Write ``OUT/recipe.json`` (the settings used, overrides applied), ``OUT/results.json`` (what the run returned)
    and a model card (README.md) into each saved model folder ``OUT/<key>`` (``forms``: folder key in ``result`` ->
    card form; ``result[key]`` is the path the card names, where the folder will be once a replacement has moved in),
    citing ``citations`` (the run's losses': :func:`~sbert_nonling.export.model_card.loss_citations`).

    The cards carry the scores ``result`` holds: STS dev before / after training (``dev_*``), multilingual STS-B dev
    (``multilingual_*``) and held-out caption <-> image retrieval (``retrieval``). Each describes the model saved in
    its folder; all keep what sentence-transformers recorded of the training in any of them (its widget examples,
    datasets and tags: the full model's README holds them, a text export's does not), and a bundled recipe's cards
    name the settings the run changed from it (``settings["name"]``: :func:`get_recipe`).

    Args:
        output_dir: the run folder ``OUT``.
        settings: the resolved recipe settings, written to ``recipe.json``.
        result: what the run returned (paths and scores), written to ``results.json``.
        forms: folder key in ``result`` -> card form of the model saved there; one card per key.
        data: one line per data source the cards name (e.g. :meth:`DataSources.card_lines`).
        citations: BibTeX entries of the run's losses, cited in every card.
    """
    output_dir = Path(output_dir)
    (output_dir / "recipe.json").write_text(json.dumps(dict(settings), indent=2, sort_keys=True), encoding="utf-8")
    (output_dir / "results.json").write_text(json.dumps(dict(result), indent=2, sort_keys=True), encoding="utf-8")
    scores = {label: result[key] for key, label in DEV_ROWS.items() if result.get(key)}
    multilingual = {label: result[key] for key, label in MULTILINGUAL_ROWS.items() if result.get(key)}
    saved = {key: form for key, form in forms.items() if result.get(key)}
    recorded = recorded_card_data(*(output_dir / key for key in saved))
    recipe_settings = get_recipe(settings["name"]) if settings.get("name") in list_recipes() else None
    for key, form in saved.items():
        write_model_card(
            output_dir / key,
            settings,
            form,
            recorded=recorded,
            recipe_settings=recipe_settings,
            scores=scores,
            training_data=data,
            name=str(result[key]),
            citations=citations,
            retrieval=result.get("retrieval"),
            multilingual_scores=multilingual,
        )
