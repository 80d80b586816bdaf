"""NonLinguisticModelCardData: sentence-transformers' model card data for models with this package's modules: widget
examples taken from text only, a usage snippet that loads the model the way that works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformerModelCardData

#: The comment the usage snippet of a model with this package's modules starts with.
INSTALL_LINE = "# pip install sbert-nonling  (this model's modules come from that package)"


def holds_text(dataset: Any) -> bool:
    """Whether the rows of ``dataset`` (as the trainer reads them, through any transform) hold a sentence, apart from
    the ``dataset_name`` column the trainer adds to every dataset of a dict."""
    if not isinstance(dataset, Dataset) or len(dataset) == 0:
        return True  # not ours to judge: sentence-transformers skips what it cannot sample
    return any(isinstance(value, str) for key, value in dataset[0].items() if key != "dataset_name")


class NonLinguisticModelCardData(SentenceTransformerModelCardData):
    """:class:`~sentence_transformers.SentenceTransformerModelCardData` for a model whose modules are this package's
    (``ModalityRouter``, ``SharedEncoder``, front-ends, ``PixelRenderer``): what ``model.save(...)`` or
    ``push_to_hub`` writes into its README.

    What it adds, (0) the package requirement: while the card is written, the ``requirements`` the model's modules
    declare (a ``requirements`` attribute, as :class:`~sbert_nonling.modules.ModalityRouter` declares this package)
    join those of the ``config_sentence_transformers.json`` that sentence-transformers has just written into the
    folder being saved (``save_dir``); sentence-transformers checks them before importing any module, so loading on
    a machine without the package fails early with a pip hint. sentence-transformers 6.2 writes that file from the
    model alone (no key can be added through it) and never writes ``requirements``; of the hooks that run during a
    save, this is the model-level one. A model loaded from a folder and saved again untrained keeps its loaded README:
    sentence-transformers writes no card then, and the entry is not declared again. (1) The
    usage snippet: it loads the model the only way that works,
    ``SentenceTransformer("id", trust_remote_code=True)`` after ``pip install sbert-nonling``, instead of the plain
    ``SentenceTransformer("id")`` (which fails on such a model); a text export
    (:func:`~sbert_nonling.export.export_text_model`) holds only sentence-transformers' own modules and keeps the
    plain card data and snippet. (2) Widget examples: sentence-transformers 6.2 samples widget sentences from every training dataset; a dataset whose
    rows hold only images or audio (VisualCSE's two-view images, AudioCSE's clips) yields rows with nothing but the
    trainer's ``dataset_name`` string, and ``set_widget_examples`` dies with ``IndexError: list index out of range``
    while a plain ``SentenceTransformerTrainer`` is being built. Here such datasets are left out of the sampling, so
    ``SentenceTransformerTrainer(train_dataset=DatasetDict({"image": ..., "text": ...}), loss={...})`` builds and
    trains. Every model with a :class:`~sbert_nonling.modules.ModalityRouter` gets it (the router's
    ``on_model_ready``), whether built or loaded.
    """

    def generate_usage_snippet(self) -> str:
        snippet = super().generate_usage_snippet()
        model_id = self.model_id or "sentence_transformers_model_id"
        plain = f'SentenceTransformer("{model_id}")'
        return snippet.replace(plain, f'SentenceTransformer("{model_id}", trust_remote_code=True)').replace(
            "from sentence_transformers import", f"{INSTALL_LINE}\nfrom sentence_transformers import", 1
        )

    def save_usage_example_assets(self) -> None:
        """sentence-transformers' usage example files, then the modules' ``requirements`` declared in the saved model
        config (called by sentence-transformers during a save, once ``save_dir`` is the folder being saved)."""
        super().save_usage_example_assets()
        modules = self.model.modules() if self.model is not None else ()
        requirements = {name: spec for module in modules for name, spec in getattr(module, "requirements", {}).items()}
        config_path = Path(self.save_dir or "", "config_sentence_transformers.json")
        if requirements and self.save_dir and config_path.is_file():
            config = json.loads(config_path.read_text(encoding="utf8"))
            config["requirements"] = {**config.get("requirements", {}), **requirements}
            config_path.write_text(json.dumps(config, indent=2, sort_keys=True), encoding="utf8")

    def set_widget_examples(self, dataset: Dataset | DatasetDict) -> None:
        if isinstance(dataset, DatasetDict):
            text_only = DatasetDict({name: part for name, part in dataset.items() if holds_text(part)})
            if not text_only:
                return
            dataset = text_only
        super().set_widget_examples(dataset)
