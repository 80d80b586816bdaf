"""Model cards for trained models: method, model, recipe, data, scores and metadata, the right loading snippet,
citations; :func:`card_for_repo` fills in the Hub repository a card is published to."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from huggingface_hub import EvalResult, ModelCard, ModelCardData, try_to_load_from_cache
from sentence_transformers.base.modules import Router
from torch import nn

from sbert_nonling.data.hub import HUB_NAME
from sbert_nonling.evaluation.sts_data import STS_TASKS

CardForm = Literal["text", "full", "pixel"]

#: sentence-transformers, cited on every card beside the losses' papers.
SENTENCE_TRANSFORMERS_CITATION = """@inproceedings{reimers2019sentencebert,
    title = {Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks},
    author = {Reimers, Nils and Gurevych, Iryna},
    booktitle = {EMNLP},
    year = {2019}
}"""
#: Recipe keys shown in the card's hyper-parameter list (those a recipe has; a stage with all its settings).
CARD_SETTINGS = (
    "model",
    "pooling",
    "text_loss",
    "batch_size",
    "learning_rate",
    "epochs",
    "max_steps",
    "max_seq_length",
    "modality",
    "modality_loss",
    "modality_batch_size",
    "modality_learning_rate",
    "scheme",
    "vit",
    "image_encoder",
    "image_dimension",
    "grounding",
    "anchor",
    "max_patches",
    "perturbation_sets",
    "contrastive",
    "multitask",
    "visual",
    "topical",
    "reasoning",
    "leapfrog_iterations",
    "seed",
    "tiny",
)
#: What each route of a full or pixel model encodes, as its card names it.
ROUTE_INPUTS = {"text": "text", "image": "images", "audio": "audio", "pixel": "text as rendered pixels"}
#: The first argument of a loading call in a card's code: the model's Hub id or folder.
LOADING_CALL = re.compile(r"""SentenceTransformer\(\s*(["'])([^"'\n]*)\1""")
#: A Hub model id as a recipe's ``model`` setting may give it: ``name`` or ``owner/name``.
HUB_MODEL_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")


def _joined(items: Sequence[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def _loading_snippet(form: CardForm, name: str, routes: Sequence[str]) -> str:
    if form == "text":
        install, load = "", f'"{name}")  # plain sentence-transformers: no extra package needed'
    else:
        if routes:
            what = "encodes " + _joined([ROUTE_INPUTS[route] for route in routes])
        else:
            what = "reads text as rendered pixels" if form == "pixel" else "its modules come from sbert-nonling"
        install = "# pip install sbert-nonling   (the model's custom modules live in this package)\n"
        load = f'"{name}", trust_remote_code=True)  # {what}'
    return f"""```python
{install}from sentence_transformers import SentenceTransformer

model = SentenceTransformer({load}
embeddings = model.encode(["A man is playing a guitar.", "Someone plays the guitar."])
print(model.similarity(embeddings, embeddings))
```"""


def _markdown_table(scores: Mapping[str, Mapping[str, float]], shown: Mapping[str, str] | None = None) -> str:
    """Rows of scores by task, ``"avg"`` last; ``shown`` renames task columns (e.g. to language codes)."""
    seen = {task for row in scores.values() for task in row if task != "avg"}
    tasks = [task for task in STS_TASKS if task in seen] + sorted(seen - set(STS_TASKS))
    header = [(shown or {}).get(task, task) for task in tasks]
    lines = ["| | " + " | ".join(header) + " | Avg |", "|---|" + "---:|" * (len(tasks) + 1)]
    for label, row in scores.items():
        cells = [f"{row[task]:.2f}" if task in row else "-" for task in tasks]
        average = f"{row['avg']:.2f}" if "avg" in row else "-"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {average} |")
    return "\n".join(lines)


def hub_datasets(training_data: Iterable[str]) -> list[str]:
    """The Hub datasets among a card's data lines (``"captions_file: nlphuji/flickr30k?split=test"``: a name as given;
    a local file is a line with its file name only, :meth:`~sbert_nonling.data.DataSources.card_lines`).

    Args:
        training_data: the card's data lines, ``"<source>: <file name or Hub dataset>"``.

    Example::

        from sbert_nonling.export.model_card import hub_datasets

        lines = ["text_file: wiki.txt", "captions_file: nlphuji/flickr30k?split=test"]
        print(hub_datasets(lines))  # ['nlphuji/flickr30k']
    """
    names = [line.partition(": ")[2].partition("?")[0] for line in training_data]
    return list(dict.fromkeys(name for name in names if HUB_NAME.match(name)))


def _hub_name_of_folder(folder: Path) -> str | None:
    """The Hub repository a local model folder is a copy of, where the folder says so: a Hugging Face cache snapshot
    (``.../models--org--name/snapshots/<commit>``), or a README.md whose loading code names a Hub id."""
    for part in folder.resolve().parts:
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    readme = folder / "README.md"
    if readme.is_file():
        for match in LOADING_CALL.finditer(readme.read_text(encoding="utf-8")):
            name = match.group(2)
            if HUB_NAME.match(name) and not Path(name).exists():
                return name
    return None


def base_model_card_data(model: str) -> dict[str, Any]:
    """What a card can say, offline, about the encoder a run started from (a recipe's ``model`` setting):
    ``base_model`` (its Hub name), and the ``license`` and ``language`` its own card declares.

    A Hub name is the base model as given; its card is read where the Hugging Face cache holds it. A local folder is
    named by the Hub repository it is a copy of where the folder says so (a Hugging Face cache snapshot,
    ``.../models--org--name/snapshots/<commit>``, or a README.md whose loading code names a Hub id), and has no
    ``base_model`` otherwise: a card never publishes a local path. Its README.md gives the license and language.

    Args:
        model: a Hub model id or a local model folder.

    Example::

        from sbert_nonling.export.model_card import base_model_card_data

        data = base_model_card_data("sentence-transformers/all-MiniLM-L6-v2")
        print(data)  # {'base_model': 'sentence-transformers/all-MiniLM-L6-v2', ...}
    """
    folder = Path(model)
    hub_name: str | None = None
    readme: Path | None = None
    if folder.exists():
        hub_name, readme = _hub_name_of_folder(folder), folder / "README.md"
    elif HUB_MODEL_ID.match(model):
        cached = try_to_load_from_cache(model, "README.md")
        hub_name, readme = model, Path(cached) if isinstance(cached, str) else None
    card_data: dict[str, Any] = {"base_model": hub_name} if hub_name else {}
    if readme is not None and readme.is_file():
        declared = ModelCard.load(readme, ignore_metadata_errors=True).data
        card_data.update({key: declared.get(key) for key in ("license", "language") if declared.get(key)})
    return card_data


def saved_routes(folder: str | Path) -> list[str]:
    """The routes of the ModalityRouter saved in ``folder`` (its ``router_config.json``); none for a plain model.

    Args:
        folder: a saved model folder.
    """
    config = Path(folder) / Router.config_file_name
    return list(json.loads(config.read_text(encoding="utf-8"))["structure"]) if config.is_file() else []


def _model_lines(
    recipe: Mapping[str, Any],
    form: CardForm,
    routes: Sequence[str],
    training_data: Sequence[str],
    base_model: str | None,
) -> list[str]:
    """The card's description of the model, from the run's settings, its data and the routes it was saved with."""
    if recipe.get("tiny"):
        start = "a tiny randomly initialised encoder (the recipe's `tiny` settings)"
    elif base_model:
        start = f"`{base_model}`"
    else:
        start = f"a local encoder folder (`{Path(recipe.get('model', '')).name}`)"
    lines = [
        f"Starting encoder: {start}, `{recipe['pooling']}` pooling."
        if "pooling" in recipe
        else f"Starting encoder: {start}."
    ]
    if form == "text":
        lines.append("This folder holds the text route alone, in sentence-transformers' own modules.")
    elif routes:
        shared = ", all ending in the one shared encoder" if len(routes) > 1 else ""
        lines.append(f"Routes: {', '.join(f'`{route}`' for route in routes)}{shared}.")
    if "image_encoder" in recipe:  # caption grounding: the image side is training data, not part of the model
        features = next(
            (line.partition(": ")[2] for line in training_data if line.startswith("image_features: ")), None
        )
        dimension = recipe.get("image_dimension", "?")
        if features:
            grounded = (
                f"frozen image features ({dimension}-d) read from `{features}` (the setting `image_encoder` unused)"
            )
        else:
            grounded = f"frozen `{recipe['image_encoder']}` image features ({dimension}-d, setting `image_encoder`)"
        lines.append(
            f"Captions were grounded in {grounded}; the image features and the grounding heads served in training "
            "only."
        )
    return lines


def _eval_results(
    scores: Mapping[str, Mapping[str, float]],
    multilingual_scores: Mapping[str, Mapping[str, float]],
    retrieval: Mapping[str, float],
    captions: str | None,
) -> list[EvalResult]:
    """``model-index`` entries: the last row of each STS table (the trained model's scores) and the retrieval
    recalls."""
    results = []
    for table in (scores, multilingual_scores):
        if table:
            last = list(table.values())[-1]
            results += [
                EvalResult(
                    task_type="semantic-similarity",
                    task_name="Semantic Similarity",
                    dataset_type=task,
                    dataset_name=task,
                    dataset_split="dev",
                    metric_type="spearman_cosine",
                    metric_name="Spearman Cosine x100",
                    metric_value=round(score, 2),
                )
                for task, score in last.items()
                if task != "avg"
            ]
    results += [
        EvalResult(
            task_type="retrieval",
            task_name="Caption-image retrieval (training-only grounding heads)",
            dataset_type=(captions or "captions").partition("?")[0],
            dataset_name=f"held-out images of {captions or 'the captions'}",
            metric_type=metric,
            metric_name=metric.replace("_", " "),
            metric_value=round(value, 2),
        )
        for metric, value in retrieval.items()
    ]
    return results


def model_card(
    recipe: Mapping[str, Any],
    form: CardForm,
    scores: Mapping[str, Mapping[str, float]] | None = None,
    training_data: Sequence[str] = (),
    name: str = "path/to/model",
    citations: Sequence[str] = (),
    routes: Sequence[str] = (),
    retrieval: Mapping[str, float] | None = None,
    multilingual_scores: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    """The README.md of a trained model: YAML metadata (tags, ``base_model``, ``license``, ``language``, ``datasets``,
    ``model-index``), method, model, recipe, training data, scores, loading code and citations.

    Everything it says comes from its arguments: the model section from the settings (the starting encoder, the image
    encoder of caption grounding) and ``routes``; the metadata from :func:`base_model_card_data` (``recipe["model"]``,
    none for a tiny run) and the Hub datasets among ``training_data``; ``model-index`` from the last row of each score
    table (the trained model's) and ``retrieval``.

    Args:
        recipe: the recipe settings the model was trained with (``get_recipe(...)`` after overrides).
        form: ``"text"`` (plain export), ``"full"`` (multimodal) or ``"pixel"`` (the last two load with
            ``pip install sbert-nonling`` + ``trust_remote_code=True``).
        scores: row label -> {STS task: Spearman x100, "avg": mean}, e.g. dev scores before / after training.
        training_data: one line per dataset used (:meth:`~sbert_nonling.data.DataSources.card_lines`).
        name: the Hub id or folder shown in the loading snippet (:func:`card_for_repo` sets the Hub id on upload).
        citations: the BibTeX of the losses that trained the model (:func:`loss_citations`), each cited once.
        routes: the routes of a full or pixel model (:func:`saved_routes`), e.g. ``["text", "image"]``.
        retrieval: caption <-> image Recall@K x100 on held-out images (``{"text_to_image_R@1": 41.2, ...}``).
        multilingual_scores: as ``scores``, for stsb_multi_mt tasks (``STSBenchmarkMultilingualSTS-<language>``).

    Example::

        from sbert_nonling.export.model_card import model_card
        from sbert_nonling.app import get_recipe

        card = model_card(get_recipe("visualcse"), "text", {"STS-B dev": {"STSBenchmark": 82.1, "avg": 82.1}},
                          ["wiki1m sentences", "ImageNet, 60 classes x 500 images"], name="me/visualcse-bert")
    """
    if form not in get_args(CardForm):
        raise ValueError(f"form={form!r} must be one of {list(get_args(CardForm))}.")
    unknown = [route for route in routes if route not in ROUTE_INPUTS]
    if unknown:
        raise ValueError(f"routes={list(routes)!r}: {unknown[0]!r} is not a route; routes are {list(ROUTE_INPUTS)}.")
    method = recipe.get("method", "simcse")
    label = recipe.get("name") or method
    base = base_model_card_data(recipe["model"]) if recipe.get("model") and not recipe.get("tiny") else {}
    base_model = base.get("base_model")
    captions = next((line.partition(": ")[2] for line in training_data if line.startswith("captions_file: ")), None)
    eval_results = _eval_results(scores or {}, multilingual_scores or {}, retrieval or {}, captions)
    card_data = ModelCardData(
        base_model=base_model,
        license=base.get("license"),
        language=base.get("language"),
        datasets=hub_datasets(training_data) or None,
        library_name="sentence-transformers",
        pipeline_tag="sentence-similarity",
        tags=[
            "sentence-transformers",
            "sentence-similarity",
            "feature-extraction",
            "sbert-nonling",
            method.replace("_", "-"),
        ],
        model_name=name if eval_results else None,
        eval_results=eval_results or None,
    )
    shown = dict(recipe)  # the model setting as published: its Hub name or a folder's name; a tiny run did not use it
    if recipe.get("tiny"):
        shown.pop("model", None)
    elif "model" in recipe:
        shown["model"] = base_model or Path(recipe["model"]).name
    settings = [f"- `{key}`: `{shown[key]}`" for key in CARD_SETTINGS if key in shown]
    parts = [
        f"---\n{card_data.to_yaml()}\n---",
        f"# {label} sentence encoder ({'text export' if form == 'text' else form + ' model'})",
        f"Trained with [sbert-nonling](https://pypi.org/project/sbert-nonling/), recipe `{label}`: "
        f"{recipe.get('description', '')}",
        "## Model\n\n"
        + "\n".join(f"- {line}" for line in _model_lines(recipe, form, routes, training_data, base_model)),
        "## Usage\n\n" + _loading_snippet(form, name, routes),
        "## Training\n\n"
        + ("\n".join(f"- {line}" for line in training_data) or "- (not recorded)")
        + "\n\nHyper-parameters:\n\n"
        + "\n".join(settings),
    ]
    if recipe.get("tiny"):
        parts.append(
            "> This model was trained with the recipe's `tiny` settings (a small randomly initialised encoder, "
            "a few steps): a pipeline check, not a usable encoder."
        )
    evaluation = []
    if scores:
        evaluation.append(
            "STS, cosine Spearman x100 (dev scores are the only model-selection signal).\n\n" + _markdown_table(scores)
        )
    if multilingual_scores:
        languages = {task: task.rpartition("-")[2] for row in multilingual_scores.values() for task in row}
        evaluation.append(
            "Multilingual STS-B dev (stsb_multi_mt), cosine Spearman x100.\n\n"
            + _markdown_table(multilingual_scores, languages)
        )
    if retrieval:
        rows = "\n".join(f"| {metric.replace('_', ' ')} | {value:.2f} |" for metric, value in retrieval.items())
        evaluation.append(
            "Caption <-> image retrieval on held-out images, Recall@K x100, in the grounding loss's shared space (its "
            "projection heads are used in training only, so the saved model alone does not reproduce it).\n\n"
            f"| | Recall x100 |\n|---|---:|\n{rows}"
        )
    if evaluation:
        parts.append("## Evaluation\n\n" + "\n\n".join(evaluation))
    entries = bibtex_entries([*citations, SENTENCE_TRANSFORMERS_CITATION])
    parts.append("## Citation\n\n```bibtex\n" + "\n\n".join(entries) + "\n```")
    return "\n\n".join(parts) + "\n"


def card_for_repo(card: str, repo_id: str) -> str:
    """``card`` (a README.md) as published to the Hub repository ``repo_id``: every loading call in its code loads
    ``repo_id`` (``SentenceTransformer("repo_id", ...)`` instead of a local folder) and its ``model-index`` is named
    after it.

    Args:
        card: a model card's text (:func:`model_card`).
        repo_id: the Hub repository it is published to, ``owner/name``.

    Example::

        from sbert_nonling.export.model_card import card_for_repo

        card = '```python\\nmodel = SentenceTransformer("runs/first/export")\\n```\\n'  # a run's card loads its folder
        print(card_for_repo(card, "me/encoder"))  # ... SentenceTransformer("me/encoder") ...
    """
    card = LOADING_CALL.sub(f'SentenceTransformer("{repo_id}"', card)
    repo_card = ModelCard(card, ignore_metadata_errors=True)
    if not isinstance(repo_card.data, ModelCardData) or not repo_card.data.eval_results:
        return card
    repo_card.data.model_name = repo_id
    return str(repo_card)


def bibtex_entries(citations: Iterable[str]) -> list[str]:
    """The BibTeX entries of ``citations`` (strings of one or more entries, e.g. losses' ``citation``), each once (by
    its key), in order of first appearance.

    Args:
        citations: BibTeX strings, each of one or more entries.
    """
    entries: dict[str, str] = {}
    for citation in citations:
        for entry in re.split(r"(?m)^(?=@\w+\{)", citation.strip()):
            if entry.strip():
                key = entry[entry.index("{") + 1 : entry.index(",")].strip()
                entries.setdefault(key, entry.strip())
    return list(entries.values())


def loss_citations(loss: nn.Module | Mapping[str, nn.Module]) -> list[str]:
    """The ``citation`` of a trainer's loss (or of each loss of a dict): the papers of the method it trains.

    Args:
        loss: a loss, or ``{dataset name: loss}``; a loss without a ``citation`` adds none.
    """
    losses = loss.values() if isinstance(loss, Mapping) else [loss]
    citations = [getattr(item, "citation", None) for item in losses]
    return [citation for citation in citations if citation]


def write_model_card(folder: str | Path, recipe: Mapping[str, Any], form: CardForm, **kwargs: Any) -> Path:
    """Write :func:`model_card` as ``folder/README.md`` (replacing sentence-transformers' default), with the routes of
    the model saved in ``folder`` (:func:`saved_routes`). Returns the README's path.

    Args:
        folder: the saved model folder.
        recipe: the recipe settings the model was trained with.
        form: the card's form, ``"text"``, ``"full"`` or ``"pixel"``.
        kwargs: :func:`model_card`'s other arguments.
    """
    path = Path(folder) / "README.md"
    path.write_text(model_card(recipe, form, routes=saved_routes(folder), **kwargs), encoding="utf-8")
    return path
