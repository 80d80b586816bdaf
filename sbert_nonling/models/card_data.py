"""The model card data of models that load only with this package: the usage snippet says so."""

from __future__ import annotations

from sentence_transformers import SentenceTransformerModelCardData

#: The comment the usage snippet of a model with this package's modules starts with.
INSTALL_LINE = "# pip install sbert-nonling  (this model's modules come from that package)"


class PackageModelCardData(SentenceTransformerModelCardData):
    """sentence-transformers' model card data for a model whose modules are this package's (``ModalityRouter``,
    ``SharedEncoder``, front-ends, ``PixelRenderer``): what ``model.save(...)`` or ``push_to_hub`` writes into its
    README.

    What it adds over ``SentenceTransformerModelCardData``: the generated usage snippet loads the model the only way
    that works, ``SentenceTransformer("id", trust_remote_code=True)`` after ``pip install sbert-nonling``, instead of
    the plain ``SentenceTransformer("id")`` (which fails on such a model). A text export
    (:func:`~sbert_nonling.export.export_text_model`) holds only sentence-transformers' own modules and keeps the
    plain card data and snippet. Like the parent, it never reaches the network (``local_files_only=True``).

    Example:
        ::

            from sentence_transformers import SentenceTransformer
            from sbert_nonling.models.card_data import PackageModelCardData

            card_data = PackageModelCardData(model_id="me/visualcse-minilm")
            # SentenceTransformer(modules=[...], model_card_data=card_data).save("model") writes a README whose usage
            # code reads: model = SentenceTransformer("me/visualcse-minilm", trust_remote_code=True)
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"local_files_only": True, **kwargs})

    def generate_usage_snippet(self) -> str:
        snippet = super().generate_usage_snippet()
        model_id = self.model_id or "sentence_transformers_model_id"
        plain = f'SentenceTransformer("{model_id}")'
        return snippet.replace(plain, f'SentenceTransformer("{model_id}", trust_remote_code=True)').replace(
            "from sentence_transformers import", f"{INSTALL_LINE}\nfrom sentence_transformers import", 1
        )
