"""NonLinguisticModelCardData: model card data for models with this package's modules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformerModelCardData

#: The comment the usage snippet of a model with this package's modules starts with.
INSTALL_LINE = "# pip install sbert-nonling  (this model's modules come from that package)"


def holds_text(dataset: Any) -> bool:
    """Whether the rows of ``dataset`` (through any transform) hold a sentence besides the trainer's
    ``dataset_name``.

    Args:
        dataset: a ``datasets.Dataset`` (possibly with a transform) or any other training dataset.
    """
    if not isinstance(dataset, Dataset) or len(dataset) == 0:
        return True  # not ours to judge: sentence-transformers skips what it cannot sample
    return any(isinstance(value, str) for key, value in dataset[0].items() if key != "dataset_name")


class NonLinguisticModelCardData(SentenceTransformerModelCardData):
    """Model card data for a model with a :class:`~sbert_nonling.modules.ModalityRouter` (set in ``on_model_ready``).

    What it adds: the modules' ``requirements`` in the saved model config; a usage snippet with
    ``pip install sbert-nonling`` and ``trust_remote_code=True``; widget examples from text datasets only.
    """

    def generate_usage_snippet(self) -> str:
        snippet = super().generate_usage_snippet()
        model_id = self.model_id or "sentence_transformers_model_id"
        plain = f'SentenceTransformer("{model_id}")'
        return snippet.replace(plain, f'SentenceTransformer("{model_id}", trust_remote_code=True)').replace(
            "from sentence_transformers import", f"{INSTALL_LINE}\nfrom sentence_transformers import", 1
        )

    def save_usage_example_assets(self) -> None:
        """sentence-transformers' usage example files, then the modules' ``requirements`` in the saved model config."""
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
