"""Write the text path of a model as an ordinary sentence-transformers checkpoint (built-in modules only)."""

from __future__ import annotations

import copy
import logging
import shutil
import tempfile
from pathlib import Path
from typing import cast

from sentence_transformers import SentenceTransformer, SentenceTransformerModelCardData
from sentence_transformers.sentence_transformer.modules import Transformer

from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.util.validation import check_export_target

logger = logging.getLogger(__name__)


#: The card data fields an export takes over from the model: the widget's example sentences, the datasets, the tags
#: and the citations of its losses sentence-transformers' trainer recorded; the rest (modules, base model) is the
#: export's own.
CARRIED_CARD_DATA = ("widget", "datasets", "train_datasets", "eval_datasets", "tags", "citations")


def export_text_model(
    model: SentenceTransformer, path: str | Path, model_name: str | None = None, overwrite: bool = False
) -> Path:
    """Save the text route of ``model`` as a checkpoint that plain ``SentenceTransformer(path)`` loads anywhere: the
    shared encoder as a built-in :class:`Transformer` (same weights, tokenizer, max_seq_length) and the downstream
    modules as they are, so it encodes text exactly as ``model`` does; other front-ends and loss heads are left out.

    Args:
        model: a model whose first module is a :class:`ModalityRouter` with a "text" route ``[encoder]``, or a plain
            ``Transformer`` model.
        path: output folder (returned); it must not exist or be empty, unless ``overwrite``.
        model_name: optional name for the model card.
        overwrite: replace what the folder ``path`` holds (the new export is written beside it first, so a failed
            export leaves it as it was).

    Example::

        from sentence_transformers import SentenceTransformer
        from sbert_nonling import export_text_model
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder

        # offline: a tiny random encoder; e.g. "bert-base-uncased"
        encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)
        trained_model = build_sentence_model(str(encoder), pooling="cls")  # e.g. a recipe run's plan.model
        export_text_model(trained_model, "my-model-text")
        plain = SentenceTransformer("my-model-text")  # no trust_remote_code needed
    """
    path = Path(path)
    replace = check_export_target(path, overwrite)
    encoder = model[0]
    if isinstance(encoder, ModalityRouter):
        if "text" not in encoder.sub_modules:
            raise ValueError(f"The ModalityRouter has no 'text' route to export; routes: {list(encoder.sub_modules)}.")
        text_route = list(encoder.route_chain("text"))
        if len(text_route) != 1:
            raise ValueError(
                "The 'text' route must be the shared encoder alone to export, but it is "
                f"{[type(module).__name__ for module in text_route]}."
            )
        encoder = text_route[0]
    if not isinstance(encoder, Transformer):
        raise ValueError(
            f"Cannot export a text model whose encoder is a {type(encoder).__name__}; expected a Transformer."
        )
    downstream = list(model)[1:]
    for module in downstream:
        if not type(module).__module__.startswith("sentence_transformers."):
            raise ValueError(
                f"Module {type(module).__module__}.{type(module).__name__} after the encoder is not a built-in "
                "sentence-transformers module, so the export would need trust_remote_code; remove it or export the "
                "full model with model.save()."
            )

    with tempfile.TemporaryDirectory() as encoder_dir:
        encoder.save(encoder_dir)
        plain_encoder = Transformer.load(encoder_dir)
    plain_encoder.to(next(encoder.parameters()).device)
    card_data = SentenceTransformerModelCardData(local_files_only=True, model_name=model_name)
    for name in CARRIED_CARD_DATA:  # what training recorded about the model's data, not about its modules
        setattr(card_data, name, copy.deepcopy(getattr(model.model_card_data, name)))
    plain = SentenceTransformer(
        modules=[plain_encoder, *downstream],
        similarity_fn_name=model.similarity_fn_name,
        # sentence-transformers keeps model.prompts as dict[str, str | None] (None: a default prompt switched off) but
        # annotates the constructor's prompts as dict[str, str]; it merges them the same way, Nones included.
        prompts=cast(dict[str, str], model.prompts),
        default_prompt_name=model.default_prompt_name,
        model_card_data=card_data,
    )
    if replace:  # written beside the old export, which is replaced only once the new one is whole
        with tempfile.TemporaryDirectory(prefix=f".{path.name}.", dir=path.parent) as staging:
            written = Path(staging, "export")
            plain.save(str(written), model_name=model_name)
            shutil.rmtree(path)
            written.rename(path)
    else:
        plain.save(str(path), model_name=model_name)
    logger.info(f"Text model exported to {path}")
    return path
