"""Model cards for trained models: method, the saved model (its encoder, pooling and routes) and the teachers it
was trained against, recipe, data, scores, the right loading snippet and citations, on top of what
sentence-transformers' own card recorded (its metadata, with only what it lacks added, and its training details);
:func:`card_for_repo` fills in the Hub repository a card is published to."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from huggingface_hub import EvalResult, ModelCard, ModelCardData, try_to_load_from_cache
from sentence_transformers import SentenceTransformerModelCardData
from sentence_transformers.base.model_card import get_losses
from sentence_transformers.base.modules import Router
from sentence_transformers.sentence_transformer.modules import Dense, Pooling
from torch import nn
from transformers import AutoConfig

from sbert_nonling.data.frozen_clip import CLIP_MODELS
from sbert_nonling.data.hub import HUB_NAME
from sbert_nonling.evaluation.sts_data import STS_TASKS
from sbert_nonling.models.tiny_encoder import TINY_BERT
from sbert_nonling.training.run_settings import dotted_settings
from sbert_nonling.util.choices import TINY_MODELS

CardForm = Literal["text", "full", "pixel"]

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
#: The sentences of a card's loading code, and of its widget where sentence-transformers recorded none.
EXAMPLE_SENTENCES = (
    "A man is playing a guitar.",
    "Someone plays the guitar.",
    "A woman is slicing an onion.",
    "The weather is lovely today.",
)
#: Settings that say how a run ran, not what it trained: a run that changed only these trained the recipe's
#: configuration (``tiny`` is stated on its own).
RUN_SETTINGS = (
    "name",
    "description",
    "reference",
    "tiny",
    "seed",
    "precision",
    "compile",
    "padding",
    "dataloader_num_workers",
    "dataloader_pin_memory",
    "eval_tasks",
)


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
embeddings = model.encode({json.dumps(list(EXAMPLE_SENTENCES[:2]))})
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


@dataclass
class SavedModel:
    """What a saved model folder holds, as its card describes it: read from the folder (:meth:`read`), never from
    the settings it was trained with, so that a continued sentence-transformers model is described with its own
    pooling and length, and a tiny run with its tiny encoder.

    Args:
        routes: the routes of its ModalityRouter (:func:`saved_routes`); none for a plain model.
        model_type: the encoder's ``model_type`` (``"bert"``, ``"vit_mae"``, ...).
        hidden_size: the encoder's width.
        num_hidden_layers: the encoder's layers.
        max_seq_length: tokens per input where the encoder records it (a pixel encoder reads patches instead).
        pooling: the Pooling module's mode, modes joined by ``+``.
        after_pooling: the modules after pooling, e.g. ``["Dense (128 -> 128, Tanh)", "Normalize"]``.
        dimension: the width of the embeddings.
    """

    routes: list[str]
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    max_seq_length: int | None
    pooling: str
    after_pooling: list[str]
    dimension: int

    @classmethod
    def read(cls, folder: str | Path) -> SavedModel:
        """The model saved in ``folder``: its modules (``modules.json``), the encoder's config (the last module of
        the router's default route, or the first module), its ``Pooling`` and what follows it.

        Args:
            folder: a folder written by ``model.save`` or :func:`~sbert_nonling.export_text_model`.

        Example::

            from sbert_nonling import export_text_model
            from sbert_nonling.export.model_card import SavedModel
            from sbert_nonling.models import build_sentence_model, build_tiny_encoder

            encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)
            export_text_model(build_sentence_model(str(encoder), pooling="mean"), "export")
            saved = SavedModel.read("export")
            print(saved.model_type, saved.pooling, saved.dimension)  # bert mean 32
        """
        folder = Path(folder)
        if not (folder / "modules.json").is_file():
            raise ValueError(f"{str(folder)!r} holds no saved sentence-transformers model (no modules.json).")
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        encoder = folder / modules[0]["path"]
        router_config = folder / Router.config_file_name
        if router_config.is_file():
            router = json.loads(router_config.read_text(encoding="utf-8"))
            route = router["parameters"].get("default_route") or next(iter(router["structure"]))
            encoder = encoder / router["structure"][route][-1]
        config = AutoConfig.from_pretrained(encoder).get_text_config()
        tokenizer_file = encoder / "tokenizer_config.json"  # a Transformer's max_seq_length is its tokenizer's
        tokenizer = json.loads(tokenizer_file.read_text(encoding="utf-8")) if tokenizer_file.is_file() else {}
        pooling, after, dimension = "", [], config.hidden_size
        for module in modules[1:]:
            kind = module["type"].rpartition(".")[2]
            if kind == "Pooling":
                modes = Pooling.load_config(str(folder), subfolder=module["path"])["pooling_mode"]
                modes = [modes] if isinstance(modes, str) else list(modes)
                pooling, dimension = "+".join(modes), dimension * len(modes)
            elif kind == "Dense":
                dense = Dense.load_config(str(folder), subfolder=module["path"])
                activation = dense["activation_function"].rpartition(".")[2]
                after.append(f"Dense ({dense['in_features']} -> {dense['out_features']}, {activation})")
                dimension = dense["out_features"]
            else:
                after.append(kind)
        return cls(
            routes=saved_routes(folder),
            model_type=config.model_type,
            hidden_size=config.hidden_size,
            num_hidden_layers=config.num_hidden_layers,
            max_seq_length=tokenizer.get("model_max_length"),
            pooling=pooling,
            after_pooling=after,
            dimension=dimension,
        )


#: What sentence-transformers' card metadata says of an evaluation, not of the saved weights (its ``model-index``
#: holds the last scores each evaluator recorded on the model object: in a recipe run, scores from before training
#: among them). A card states its own: the scores of the saved model.
EVALUATION_FIELDS = ("model-index", "eval_results", "model_name", "metrics")
#: The sections of sentence-transformers' card that a card keeps: what its trainer recorded of the training (datasets
#: with statistics and samples, hyper-parameters, logs, time, framework versions).
RECORDED_SECTIONS = ("Training Details",)


@dataclass
class RecordedCard:
    """What the README sentence-transformers wrote on save records that a card keeps: its metadata
    (:data:`EVALUATION_FIELDS` left out) and its :data:`RECORDED_SECTIONS`.

    Args:
        metadata: the YAML metadata fields, e.g. ``widget``, ``datasets``, ``tags``, ``base_model``, ``license``.
        sections: the kept sections, each from its ``## `` heading to the next.
    """

    metadata: dict[str, Any] = field(default_factory=dict)
    sections: list[str] = field(default_factory=list)


def _sections(content: str) -> dict[str, str]:
    """The ``## `` sections of a card's markdown by heading, each with its text (outside fenced code)."""
    sections: dict[str, str] = {}
    heading, fenced = "", False
    lines: list[str] = []
    for line in content.splitlines():
        fenced = fenced != line.lstrip().startswith("```")
        if line.startswith("## ") and not fenced:
            if heading:
                sections[heading] = "\n".join(lines).strip()
            heading, lines = line.removeprefix("## ").strip(), []
        lines.append(line)
    if heading:
        sections[heading] = "\n".join(lines).strip()
    return sections


def recorded_card_data(*folders: str | Path) -> RecordedCard:
    """What the cards in saved model folders record that a card keeps. On save, sentence-transformers renders its card
    from its ``SentenceTransformerModelCardData``: the metadata its trainer and loading recorded (widget examples
    sampled from the training data, the Hub datasets it could verify, tags such as ``loss:SimCSELoss``, the base model
    it verified on the Hub, license, language, ...) and its "Training Details" (datasets with statistics and samples,
    hyper-parameters, logs, framework versions). :func:`write_model_card` replaces that README and keeps these: each
    metadata field from the first folder that has it (``datasets`` and ``tags`` from all, each once), each section
    likewise.

    Args:
        folders: saved model folders, e.g. a run's full model and its text export (whose README, written by
            :func:`~sbert_nonling.export_text_model`, holds no training logs).

    Example::

        from sbert_nonling.export.model_card import recorded_card_data

        recorded = recorded_card_data("runs/first/model", "runs/first/export")
        print(recorded.metadata.get("widget"), [section.splitlines()[0] for section in recorded.sections])
    """
    recorded = RecordedCard()
    kept: dict[str, str] = {}
    for folder in folders:
        readme = Path(folder) / "README.md"
        if not readme.is_file():
            continue
        card = ModelCard.load(readme, ignore_metadata_errors=True)
        for key, value in card.data.to_dict().items():
            if key in EVALUATION_FIELDS or value in (None, [], ""):
                continue
            if key in ("datasets", "tags"):
                known = recorded.metadata.get(key, [])
                recorded.metadata[key] = list(dict.fromkeys([*known, *([value] if isinstance(value, str) else value)]))
            else:
                recorded.metadata.setdefault(key, value)
        for heading, text in _sections(card.text).items():
            if heading in RECORDED_SECTIONS:
                kept.setdefault(heading, text)
    recorded.sections = [kept[heading] for heading in RECORDED_SECTIONS if heading in kept]
    return recorded


def changed_settings(settings: Mapping[str, Any], recipe_settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run changed from its recipe's, each with the recipe's value; a block's settings as dotted keys
    (``grounding.weight``), the :data:`RUN_SETTINGS` and a tiny run's tiny model names (:data:`TINY_MODELS`, which
    the card describes on their own) left out.

    Args:
        settings: the settings the run used (``recipe.json``).
        recipe_settings: the recipe's own settings (``get_recipe(name)``).

    Example::

        from sbert_nonling.app import get_recipe
        from sbert_nonling.export.model_card import changed_settings

        print(changed_settings(get_recipe("kdmcse", tiny=True), get_recipe("kdmcse")))  # {'pooling': 'cls', ...}
    """
    used, published = dotted_settings(settings), dotted_settings(recipe_settings)
    return {
        key: value
        for key, value in published.items()
        if key.partition(".")[0] not in RUN_SETTINGS
        and used.get(key) != value
        and not _names_tiny_models(used.get(key))
    }


def _names_tiny_models(value: Any) -> bool:
    """Whether a setting's value is a tiny model name, or a list of them (DALR's teachers)."""
    names = value if isinstance(value, list) else [value]
    return bool(names) and all(isinstance(name, str) and name in TINY_MODELS for name in names)


def _data_line(training_data: Sequence[str], source: str) -> str | None:
    """What the data line of ``source`` names (a file's name or a Hub dataset), if the run read it."""
    return next((line.partition(": ")[2] for line in training_data if line.startswith(f"{source}: ")), None)


def _published_name(model: str) -> str:
    """A model setting as a card may publish it: its Hub name, or a folder's name (never a local path)."""
    return base_model_card_data(model).get("base_model") or Path(model).name


def _starting_encoder(recipe: Mapping[str, Any], base_model: str | None) -> str:
    """How a card names the encoder a run started from."""
    if recipe.get("tiny"):
        return "a tiny randomly initialised encoder (the recipe's `tiny` settings)"
    if base_model:
        return f"`{base_model}`"
    return f"a local encoder folder (`{Path(recipe.get('model', '')).name}`)"


def _model_lines(
    recipe: Mapping[str, Any],
    form: CardForm,
    routes: Sequence[str],
    training_data: Sequence[str],
    base_model: str | None,
    saved: SavedModel | None,
) -> list[str]:
    """The card's description of the model: where it started (the settings), what was saved (``saved``: encoder,
    pooling, routes) and the image features of caption grounding."""
    lines = [f"Starting encoder: {_starting_encoder(recipe, base_model)}."]
    if saved is not None:
        layers = f"{saved.num_hidden_layers} layer{'s' if saved.num_hidden_layers != 1 else ''}"
        size = f"{layers}, hidden size {saved.hidden_size}"
        length = f"; at most {saved.max_seq_length} tokens per input" if saved.max_seq_length else ""
        lines.append(f"Encoder: `{saved.model_type}`, {size}{length}.")
        then = "".join(f", then {module}" for module in saved.after_pooling)
        lines.append(f"Pooling: `{saved.pooling}`{then}: {saved.dimension}-d embeddings.")
    if form == "text":
        lines.append("This folder holds the text route alone, in sentence-transformers' own modules.")
    elif routes:
        shared = ", all ending in the one shared encoder" if len(routes) > 1 else ""
        lines.append(f"Routes: {', '.join(f'`{route}`' for route in routes)}{shared}.")
    if "image_encoder" in recipe:  # caption grounding: the image side is training data, not part of the model
        features = _data_line(training_data, "image_features")
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


def _teacher_lines(recipe: Mapping[str, Any], training_data: Sequence[str], base_model: str | None) -> list[str]:
    """The frozen teachers a run trained against, as its settings and data name the ones it used: KDMCSE's and
    DALR's CLIP (a features file, the tiny random CLIP of a tiny run, or ``clip_encoder``), DALR's text teachers,
    MACD's anchor."""
    lines = []
    if "clip_encoder" in recipe:
        dimension = recipe["clip_dimension"]
        features = _data_line(training_data, "image_features")
        if features:
            clip = f"CLIP embeddings ({dimension}-d) read from `{features}` (the setting `clip_encoder` unused)"
        elif recipe.get("tiny"):
            clip = f"a tiny random CLIP with {dimension}-d embeddings, built offline from the training captions"
        else:
            name = _published_name(CLIP_MODELS.get(recipe["clip_encoder"], recipe["clip_encoder"]))
            clip = f"frozen `{name}` ({dimension}-d embeddings, setting `clip_encoder`), run once before training"
        lines.append(f"CLIP teacher: {clip}.")
    if "teachers" in recipe:
        weights = recipe["teacher_weights"]
        if recipe.get("tiny"):
            sizes = f"{TINY_BERT['num_hidden_layers']} layers, hidden size {TINY_BERT['hidden_size']}"
            weighted = _joined([str(weight) for weight in weights])
            teachers = (
                f"{len(recipe['teachers'])} tiny random BERTs ({sizes}) built offline on the student's vocabulary, "
                f"weighted {weighted}"
            )
        else:
            teachers = _joined(
                [f"`{_published_name(name)}` ({weight})" for name, weight in zip(recipe["teachers"], weights)]
            )
        lines.append(f"Text teachers: {teachers}.")
    if recipe.get("anchor", {}).get("enabled"):
        lines.append(
            f"Anchor teacher: a frozen copy of the starting encoder, {_starting_encoder(recipe, base_model)}."
        )
    if lines:
        lines.append("The teachers served in training only; the saved model holds none of them.")
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


def _intro(recipe: Mapping[str, Any], label: str, changed: Mapping[str, Any]) -> str:
    """The card's first line: the recipe and what it reproduces, or, for a tiny run or one that changed the
    recipe's settings, which settings differ (the recipe's description would claim settings the run did not use)."""
    trained = "Trained with [sbert-nonling](https://pypi.org/project/sbert-nonling/)"
    if not recipe.get("tiny") and not changed:
        return f"{trained}, recipe `{label}`: {recipe.get('description', '')}"
    form = " in its `tiny` form" if recipe.get("tiny") else ""
    changes = _joined([f"`{key}` (recipe: `{value}`)" for key, value in changed.items()])
    differs = f", with settings changed from the recipe's: {changes}" if changes else ""
    return (
        f"{trained} from recipe `{label}`{form}{differs}. The recipe's own configuration is not what trained this "
        "model: the model, teachers and hyper-parameters below are the ones used."
    )


def _unused_settings(recipe: Mapping[str, Any], saved: SavedModel | None) -> dict[str, str]:
    """Settings the saved model does not follow (a continued sentence-transformers model keeps its own pooling and
    length), each with what the model does instead."""
    unused = {}
    # cls_mlp is cls pooling, then a Dense
    if saved is not None and "pooling" in recipe and recipe["pooling"].removesuffix("_mlp") != saved.pooling:
        unused["pooling"] = f"the saved model pools `{saved.pooling}`"
    if saved is not None and saved.max_seq_length not in (None, recipe.get("max_seq_length")):
        unused["max_seq_length"] = f"the saved model reads {saved.max_seq_length} tokens"
    return unused


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
    saved: SavedModel | None = None,
    recorded: RecordedCard | None = None,
    recipe_settings: Mapping[str, Any] | None = None,
) -> str:
    """The README.md of a trained model: YAML metadata (tags, ``base_model``, ``license``, ``language``, ``datasets``,
    ``widget``, ``model-index``), method, model, teachers, recipe, training data, what sentence-transformers recorded
    of the training, scores, loading code and citations.

    The metadata is sentence-transformers' where it recorded it (``recorded``: the fields of the card it rendered from
    its ``SentenceTransformerModelCardData`` on save) and adds only what that lacks: the base model, license and
    language of :func:`base_model_card_data` (``recipe["model"]``; sentence-transformers names a base model only after
    checking it on the Hub; a tiny run has none), the Hub datasets among ``training_data``, this package's tags, a
    widget of :data:`EXAMPLE_SENTENCES` where none was recorded, and the ``model-index`` of the scores given (the
    saved model's; sentence-transformers' holds the last scores each evaluator recorded, :data:`EVALUATION_FIELDS`).
    Its "Training Details" section (datasets with statistics, hyper-parameters, logs, framework versions) is kept as
    it rendered it. The model section describes ``saved`` (the saved model's encoder and pooling), the settings (the
    starting encoder, the image encoder of caption grounding, the teachers: a tiny run's tiny ones) and ``routes``.
    The recipe's description opens the card only when the run is the recipe as published: a tiny run, or one whose
    settings differ from ``recipe_settings``, names the changed settings instead.

    Args:
        recipe: the recipe settings the model was trained with (``get_recipe(...)`` after overrides).
        form: ``"text"`` (plain export), ``"full"`` (multimodal) or ``"pixel"`` (the last two load with
            ``pip install sbert-nonling`` + ``trust_remote_code=True``).
        scores: row label -> {STS task: Spearman x100, "avg": mean}, e.g. dev scores before / after training.
        training_data: one line per dataset used (:meth:`~sbert_nonling.data.DataSources.card_lines`).
        name: the Hub id or folder shown in the loading snippet (:func:`card_for_repo` sets the Hub id on upload).
        citations: the BibTeX of the losses that trained the model (:func:`loss_citations`), each cited once;
            sentence-transformers' own paper is cited on every card.
        routes: the routes of a full or pixel model (:func:`saved_routes`), e.g. ``["text", "image"]``.
        retrieval: caption <-> image Recall@K x100 on held-out images (``{"text_to_image_R@1": 41.2, ...}``).
        multilingual_scores: as ``scores``, for stsb_multi_mt tasks (``STSBenchmarkMultilingualSTS-<language>``).
        saved: the saved model (:meth:`SavedModel.read`); without it the card says nothing of its encoder and
            pooling.
        recorded: what sentence-transformers' cards of the saved model recorded (:func:`recorded_card_data`); None:
            nothing recorded.
        recipe_settings: the recipe's own settings (``get_recipe(recipe["name"])``), to name what the run changed;
            None: unknown (a recipe that is not bundled), the description is shown unless the run is tiny.

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
    recorded = recorded or RecordedCard()
    eval_results = _eval_results(
        scores or {}, multilingual_scores or {}, retrieval or {}, _data_line(training_data, "captions_file")
    )
    tags = [
        "sentence-transformers",
        "sentence-similarity",
        "feature-extraction",
        "sbert-nonling",
        method.replace("_", "-"),
    ]
    fields = dict(recorded.metadata)  # sentence-transformers' own; what it lacks is added
    if recipe.get("tiny"):  # a tiny run starts from a random encoder: it has no base model
        fields.pop("base_model", None)
    elif recipe.get("model"):
        for key, value in base_model_card_data(recipe["model"]).items():
            fields.setdefault(key, value)
    fields.setdefault("library_name", "sentence-transformers")
    fields.setdefault("pipeline_tag", "sentence-similarity")
    fields.setdefault("widget", [{"source_sentence": EXAMPLE_SENTENCES[0], "sentences": list(EXAMPLE_SENTENCES[1:])}])
    fields["tags"] = list(dict.fromkeys([*tags, *fields.get("tags", [])]))
    datasets = list(dict.fromkeys([*hub_datasets(training_data), *fields.pop("datasets", [])]))
    card_data = ModelCardData(
        **fields,
        datasets=datasets or None,
        model_name=name if eval_results else None,
        eval_results=eval_results or None,
    )
    base_model = fields.get("base_model")
    shown = dict(recipe)  # the model setting as published: its Hub name or a folder's name; a tiny run did not use it
    if recipe.get("tiny"):
        shown.pop("model", None)
    elif "model" in recipe:
        shown["model"] = base_model or Path(recipe["model"]).name
    unused = _unused_settings(recipe, saved)
    settings = [
        f"- `{key}`: `{shown[key]}`" + (f" (unused: {unused[key]})" if key in unused else "")
        for key in CARD_SETTINGS
        if key in shown
    ]
    teachers = _teacher_lines(recipe, training_data, base_model)
    parts = [
        f"---\n{card_data.to_yaml()}\n---",
        f"# {label} sentence encoder ({'text export' if form == 'text' else form + ' model'})",
        _intro(recipe, label, changed_settings(recipe, recipe_settings) if recipe_settings else {}),
        "## Model\n\n"
        + "\n".join(f"- {line}" for line in _model_lines(recipe, form, routes, training_data, base_model, saved)),
    ]
    if teachers:
        parts.append("## Teachers\n\n" + "\n".join(f"- {line}" for line in teachers))
    parts += [
        "## Usage\n\n" + _loading_snippet(form, name, routes),
        "## Training\n\n"
        + ("\n".join(f"- {line}" for line in training_data) or "- (not recorded)")
        + "\n\nHyper-parameters:\n\n"
        + "\n".join(settings),
    ]
    parts += recorded.sections
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
    entries = bibtex_entries([*loss_citations({}), *citations])  # sentence-transformers' own paper on every card
    parts.append("## Citation\n\n```bibtex\n" + "\n\n".join(entries) + "\n```")
    return "\n\n".join(parts) + "\n"


def card_for_repo(card: str, repo_id: str) -> str:
    """``card`` (a README.md) as published to the Hub repository ``repo_id``: every loading call in its code loads
    ``repo_id`` (``SentenceTransformer("repo_id", ...)`` instead of a local folder), the example files of its training
    details (``assets/``) are linked on the Hub, as sentence-transformers links them, and its ``model-index`` is
    named after it.

    Args:
        card: a model card's text (:func:`model_card`).
        repo_id: the Hub repository it is published to, ``owner/name``.

    Example::

        from sbert_nonling.export.model_card import card_for_repo

        card = '```python\\nmodel = SentenceTransformer("runs/first/export")\\n```\\n'  # a run's card loads its folder
        print(card_for_repo(card, "me/encoder"))  # ... SentenceTransformer("me/encoder") ...
    """
    card = LOADING_CALL.sub(f'SentenceTransformer("{repo_id}"', card)
    card = card.replace('src="assets/', f'src="https://huggingface.co/{repo_id}/resolve/main/assets/')
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
    """The citations sentence-transformers' card data records for a trainer's loss (``set_losses``): its own paper
    (Sentence-BERT) first, then the ``citation`` of each loss, of each loss of a dict and of the losses they wrap
    (``get_losses``), each identical text once.

    Args:
        loss: a loss, or ``{dataset name: loss}`` (``{}``: sentence-transformers' paper alone); a loss without a
            ``citation`` adds none.

    Example::

        from sbert_nonling.export.model_card import loss_citations

        print(loss_citations({})[0].split(",")[0].strip())  # @inproceedings{reimers-2019-sentence-bert
    """
    card_data = SentenceTransformerModelCardData(local_files_only=True)
    card_data.set_losses(get_losses(dict(loss) if isinstance(loss, Mapping) else loss))
    return list(card_data.citations.values())


def write_model_card(
    folder: str | Path,
    recipe: Mapping[str, Any],
    form: CardForm,
    recorded: RecordedCard | None = None,
    **kwargs: Any,
) -> Path:
    """Write :func:`model_card` as ``folder/README.md``, describing the model saved in ``folder``
    (:meth:`SavedModel.read`: its encoder, pooling and routes) and keeping what sentence-transformers' README there
    recorded (:func:`recorded_card_data`: its metadata, e.g. the widget examples, Hub datasets and tags of its
    trainer, and its "Training Details"), which it replaces. Returns the README's path.

    Args:
        folder: the saved model folder.
        recipe: the recipe settings the model was trained with.
        form: the card's form, ``"text"``, ``"full"`` or ``"pixel"``.
        recorded: what to keep of sentence-transformers' cards (:func:`recorded_card_data` of several folders, e.g.
            a run's full model for its text export); None: the folder's own README.
        kwargs: :func:`model_card`'s other arguments.
    """
    path = Path(folder) / "README.md"
    saved = SavedModel.read(folder)
    recorded = recorded_card_data(folder) if recorded is None else recorded
    card = model_card(recipe, form, routes=saved.routes, saved=saved, recorded=recorded, **kwargs)
    path.write_text(card, encoding="utf-8")
    return path
