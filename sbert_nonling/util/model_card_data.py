"""NonLinguisticModelCardData: sentence-transformers' model card data for models with this package's modules: widget
examples taken from text only, a usage snippet that loads the model the way that works."""

from __future__ import annotations

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

    What it adds, (1) the usage snippet: it loads the model the only way that works,
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

    def set_widget_examples(self, dataset: Dataset | DatasetDict) -> None:
        if isinstance(dataset, DatasetDict):
            text_only = DatasetDict({name: part for name, part in dataset.items() if holds_text(part)})
            if not text_only:
                return
            dataset = text_only
        super().set_widget_examples(dataset)
