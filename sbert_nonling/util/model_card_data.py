"""NonLinguisticModelCardData: sentence-transformers' model card data, with widget examples taken from text only."""

from __future__ import annotations

from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformerModelCardData


def holds_text(dataset: Any) -> bool:
    """Whether the rows of ``dataset`` (as the trainer reads them, through any transform) hold a sentence, apart from
    the ``dataset_name`` column the trainer adds to every dataset of a dict."""
    if not isinstance(dataset, Dataset) or len(dataset) == 0:
        return True  # not ours to judge: sentence-transformers skips what it cannot sample
    return any(isinstance(value, str) for key, value in dataset[0].items() if key != "dataset_name")


class NonLinguisticModelCardData(SentenceTransformerModelCardData):
    """:class:`~sentence_transformers.SentenceTransformerModelCardData` that picks the card's widget examples only
    from datasets whose rows hold sentences.

    What it adds: sentence-transformers 6.2 samples widget sentences from every training dataset; a dataset whose
    rows hold only images or audio (VisualCSE's two-view images, AudioCSE's clips) yields rows with nothing but the
    trainer's ``dataset_name`` string, and ``set_widget_examples`` dies with ``IndexError: list index out of range``
    while a plain ``SentenceTransformerTrainer`` is being built. Here such datasets are left out of the sampling, so
    ``SentenceTransformerTrainer(train_dataset=DatasetDict({"image": ..., "text": ...}), loss={...})`` builds and
    trains. Every model with a :class:`~sbert_nonling.modules.ModalityRouter` gets it (the router's
    ``on_model_ready``), whether built or loaded.
    """

    def set_widget_examples(self, dataset: Dataset | DatasetDict) -> None:
        if isinstance(dataset, DatasetDict):
            text_only = DatasetDict({name: part for name, part in dataset.items() if holds_text(part)})
            if not text_only:
                return
            dataset = text_only
        super().set_widget_examples(dataset)
