"""Model cards for trained models: method, recipe, data, STS results, the right loading snippet, citations."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from torch import nn

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
    "temperature",
    "batch_size",
    "learning_rate",
    "epochs",
    "max_steps",
    "max_seq_length",
    "modality",
    "modality_mode",
    "modality_batch_size",
    "modality_learning_rate",
    "scheme",
    "image_encoder",
    "grounding_weight",
    "grounding_direction",
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


def _loading_snippet(form: CardForm, name: str) -> str:
    if form == "text":
        install, load = "", f'"{name}")  # plain sentence-transformers: no extra package needed'
    else:
        install = "# pip install sbert-nonling   (the model's custom modules live in this package)\n"
        load = f'"{name}", trust_remote_code=True)  # ' + ("reads text as rendered pixels" if form == "pixel" else "routes text, images and audio")
    return f"""```python
{install}from sentence_transformers import SentenceTransformer

model = SentenceTransformer({load}
embeddings = model.encode(["A man is playing a guitar.", "Someone plays the guitar."])
print(model.similarity(embeddings, embeddings))
```"""


def _markdown_table(scores: Mapping[str, Mapping[str, float]]) -> str:
    seen = {task for row in scores.values() for task in row if task != "avg"}
    tasks = [task for task in STS_TASKS if task in seen] + sorted(seen - set(STS_TASKS))
    lines = ["| | " + " | ".join(tasks) + " | Avg |", "|---|" + "---:|" * (len(tasks) + 1)]
    for label, row in scores.items():
        cells = [f"{row[task]:.2f}" if task in row else "-" for task in tasks]
        average = f"{row['avg']:.2f}" if "avg" in row else "-"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {average} |")
    return "\n".join(lines)


def model_card(
    recipe: Mapping[str, Any],
    form: CardForm,
    scores: Mapping[str, Mapping[str, float]] | None = None,
    training_data: Sequence[str] = (),
    name: str = "path/to/model",
    citations: Sequence[str] = (),
) -> str:
    """The README.md of a trained model: YAML metadata, method and recipe, training data, STS results, loading code
    and citations.

    Args:
        recipe: the recipe settings the model was trained with (``get_recipe(...)`` after overrides).
        form: ``"text"`` (plain export), ``"full"`` (multimodal) or ``"pixel"`` (the last two load with
            ``pip install sbert-nonling`` + ``trust_remote_code=True``).
        scores: row label -> {STS task: Spearman x100, "avg": mean}, e.g. dev scores before / after training.
        training_data: one line per dataset used.
        name: the Hub id or folder shown in the loading snippet.
        citations: the BibTeX of the losses that trained the model (:func:`loss_citations`), each cited once.

    Example::

        from sbert_nonling.export.model_card import model_card
        from sbert_nonling.app import get_recipe

        card = model_card(get_recipe("visualcse"), "text", {"STS-B dev": {"STSBenchmark": 82.1, "avg": 82.1}},
                          ["wiki1m sentences", "ImageNet, 60 classes x 500 images"], name="me/visualcse-bert")
    """
    if form not in ("text", "full", "pixel"):
        raise ValueError(f"form={form!r} must be 'text', 'full' or 'pixel'.")
    method = recipe.get("method", "simcse")
    tags = ["sentence-transformers", "sentence-similarity", "feature-extraction", "sbert-nonling", method.replace("_", "-")]
    base = [f"base_model: {recipe['model']}"] if recipe.get("model") and not recipe.get("tiny") else []
    front = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity", "tags:", *(f"- {tag}" for tag in tags), *base, "---"]
    settings = [f"- `{key}`: `{recipe[key]}`" for key in CARD_SETTINGS if key in recipe]
    parts = [
        "\n".join(front),
        f"# {recipe.get('name', method)} sentence encoder ({'text export' if form == 'text' else form + ' model'})",
        f"Trained with [sbert-nonling](https://pypi.org/project/sbert-nonling/), recipe `{recipe.get('name', method)}`: "
        f"{recipe.get('description', '')}",
        "## Usage\n\n" + _loading_snippet(form, name),
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
    if scores:
        parts.append("## Evaluation\n\nSTS, cosine Spearman x100 (dev scores are the only model-selection signal).\n\n" + _markdown_table(scores))
    entries = bibtex_entries([*citations, SENTENCE_TRANSFORMERS_CITATION])
    parts.append("## Citation\n\n```bibtex\n" + "\n\n".join(entries) + "\n```")
    return "\n\n".join(parts) + "\n"


def bibtex_entries(citations: Iterable[str]) -> list[str]:
    """The BibTeX entries of ``citations`` (strings of one or more entries, e.g. losses' ``citation``), each once (by
    its key), in order of first appearance."""
    entries: dict[str, str] = {}
    for citation in citations:
        for entry in re.split(r"(?m)^(?=@\w+\{)", citation.strip()):
            if entry.strip():
                key = entry[entry.index("{") + 1 : entry.index(",")].strip()
                entries.setdefault(key, entry.strip())
    return list(entries.values())


def loss_citations(loss: nn.Module | Mapping[str, nn.Module]) -> list[str]:
    """The ``citation`` of a trainer's loss (or of each loss of a dict): the papers of the method it trains."""
    losses = loss.values() if isinstance(loss, Mapping) else [loss]
    return [citation for item in losses if (citation := getattr(item, "citation", None))]


def write_model_card(folder: str | Path, *args, **kwargs) -> Path:
    """Write :func:`model_card` (same arguments) as ``folder/README.md``, replacing sentence-transformers' default."""
    path = Path(folder) / "README.md"
    path.write_text(model_card(*args, **kwargs), encoding="utf-8")
    return path
