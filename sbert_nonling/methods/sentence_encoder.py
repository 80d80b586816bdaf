"""The starting sentence model and the text training data of the methods that train a token encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
from sentence_transformers.util import is_sentence_transformer_model

from sbert_nonling.configs.losses import SimCSELossConfig
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig, SingleRunConfig
from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.models.sentence_model import build_sentence_model
from sbert_nonling.models.tiny_encoder import resolve_model
from sbert_nonling.training.arguments import training_arguments
from sbert_nonling.util.unreachable import loading

#: How a run names its starting model (``config.model``), and what to do when it cannot be reached.
MODEL_SETTING = "the setting 'model', --model on the command line"
MODEL_OFFLINE = (
    "pass a local folder (model=PATH, --model PATH), or train the recipe's tiny form (--tiny: a small random encoder "
    "built offline)."
)


def recipe_label(config: SentenceEncoderConfig) -> str:
    """How error messages name the configuration: ``Recipe 'simcse-unsup'`` (or the method without a recipe name).

    Args:
        config: the run's config.
    """
    return f"Recipe {config.name!r}" if config.name else f"Method {config.method!r}"


def text_training_data(
    config: SingleRunConfig, text_file: str | Path | None, nli_file: str | Path | None, captions_only: bool = False
) -> tuple[Dataset | None, list[str]]:
    """The text dataset ``config.data`` names and its sentences: ``(s, s)`` pairs of ``text_file`` (``"text"``),
    (anchor, positive, negative) triplets of ``nli_file`` (``"nli"``), or none (``"captions"``: captions only, for
    the methods that train on captions, ``captions_only=True``).

    Args:
        config: the method's config (its ``data``).
        text_file: one sentence per line, or a Hub dataset.
        nli_file: a ``sent0,sent1,hard_neg`` CSV, or a Hub dataset.
        captions_only: whether the method can train on captions alone.
    """
    if config.data == "captions":
        if not captions_only:
            raise ValueError(
                f"{recipe_label(config)}: data='captions' trains on captions only, which only the grounding methods "
                "(mcse, macd, kdmcse, dalr) do; set data to 'text' or 'nli'."
            )
        return None, []
    if config.data == "text":
        if text_file is None:
            raise ValueError(
                f"{recipe_label(config)} trains on plain sentences: pass text_file (one sentence per line)."
            )
        sentences = read_sentences(text_file)
        return sentence_pairs_dataset(sentences), sentences
    if nli_file is None:
        raise ValueError(f"{recipe_label(config)} trains on NLI triplets: pass nli_file (sent0,sent1,hard_neg CSV).")
    triplets = read_nli_triplets(nli_file)
    return nli_triplets_dataset(triplets), [sentence for triplet in triplets for sentence in triplet]


def starting_sentence_model(
    config: SentenceEncoderConfig, sentences: list[str], tiny_encoder: dict[str, Any] | None = None
) -> SentenceTransformer:
    """The sentence model training starts from (:func:`build_sentence_model` with ``config.pooling`` and
    ``config.max_seq_length``): ``config.model`` as :func:`resolve_model` resolves it (``tiny:bert``: a small random
    BERT whose vocabulary comes from ``sentences``, sized by ``tiny_encoder``, in a temporary folder); a
    sentence-transformers model keeps what ``config.keep_model_modules`` names (its own pooling modules and prompts,
    its max_seq_length). A model that cannot be loaded raises one ValueError line naming it.

    Args:
        config: the method's config.
        sentences: the training sentences (a tiny encoder's vocabulary).
        tiny_encoder: :func:`~sbert_nonling.models.build_tiny_encoder` arguments of a tiny encoder.
    """
    with resolve_model(config.model, sentences, seed=config.seed, **(tiny_encoder or {})) as model:
        keep = config.keep_model_modules if is_sentence_transformer_model(model) else []
        with loading("Model", config.model, MODEL_SETTING, MODEL_OFFLINE):
            return build_sentence_model(
                model,
                pooling=None if "pooling" in keep else config.pooling,
                max_seq_length=None if "max_seq_length" in keep else config.max_seq_length,
            )


def single_run_arguments(
    config: SingleRunConfig, evaluating: bool, **options: Any
) -> SentenceTransformerTrainingArguments:
    """The arguments of a single-run method's one training run (:func:`training_arguments`): the config's learning
    rate, batch size, epochs, max steps and warmup, checkpoints in ``checkpoints/``.

    Args:
        config: the method's config (its trainer options and optimizer settings).
        evaluating: whether a dev evaluator scores checkpoints and selects the best one.
        options: further :func:`training_arguments` keywords (``gradient_accumulation_steps``, ``interleaved``).
    """
    return training_arguments(config, "checkpoints", evaluating, run=config, **options)


def text_contrastive_loss(
    sentence_model: SentenceTransformer, settings: SimCSELossConfig, gather_across_devices: bool = False
) -> SimCSELoss:
    """The SimCSE loss of a method's text batches, from its ``text_loss`` block.

    Args:
        sentence_model: the model being trained.
        settings: the method's ``text_loss`` block (temperature, training head, angular margin).
        gather_across_devices: negatives from every process's batch (under torchrun / accelerate); an angular margin
            keeps each process's own.
    """
    return SimCSELoss(
        sentence_model,
        temperature=settings.temperature,
        training_head=settings.training_head,
        margin=settings.margin,
        gather_across_devices=gather_across_devices and not settings.margin,
    )
