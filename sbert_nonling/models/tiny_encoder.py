"""The tiny model names (``tiny:bert``, ``tiny:clip``, ``tiny:pixel``) and the small, randomly initialised BERT, CLIP
and PIXEL-architecture folders they stand for, built offline (vocabulary taken from the user's own text)."""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer
from transformers import (
    BertConfig,
    BertModel,
    BertTokenizer,
    CLIPConfig,
    CLIPImageProcessor,
    CLIPModel,
    PretrainedConfig,
    PreTrainedModel,
)

from sbert_nonling.modules.pixel_encoder import PixelEncoder
from sbert_nonling.util.choices import TINY_MODELS

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
#: The BERT sizes of :func:`build_tiny_encoder`: 2 layers of width 128 with 2 heads, ~1.5 M parameters.
TINY_BERT: dict[str, int] = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 512,
    "max_position_embeddings": 512,
}
#: The PIXEL-architecture sizes of :func:`build_tiny_pixel`: 2 layers of width 64 with 4 heads.
TINY_PIXEL: dict[str, int] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
}


def word_piece_vocab(sentences: Iterable[str], vocab_size: int) -> dict[str, int]:
    """A deterministic WordPiece vocabulary: special tokens, every character (word-initial and ``##`` continuation),
    then the most frequent lower-cased words (ties broken alphabetically) up to ``vocab_size`` (``tokenizers``'
    WordPiece trainer breaks ties by hash order, so it differs from run to run).

    Args:
        sentences: the sentences the words come from.
        vocab_size: the size of the vocabulary, special tokens and characters included.
    """
    normalizer, pre_tokenizer = BertNormalizer(lowercase=True), BertPreTokenizer()
    counts = Counter(
        word
        for sentence in sentences
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(sentence))
    )
    characters = sorted({character for word in counts for character in word})
    tokens = list(SPECIAL_TOKENS) + characters + [f"##{character}" for character in characters]
    known = set(tokens)
    words = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if word not in known]
    tokens += words[: max(vocab_size - len(tokens), 0)]
    return {token: index for index, token in enumerate(tokens)}


def save_word_piece_tokenizer(output_dir: Path, sentences: Iterable[str], vocab_size: int) -> BertTokenizer:
    """Save a lower-casing BERT tokenizer with the :func:`word_piece_vocab` of ``sentences`` into ``output_dir``
    (created if missing), and return it.

    Args:
        output_dir: folder to write the tokenizer files into.
        sentences: text to take the vocabulary from; blank sentences are skipped, and at least one must remain.
        vocab_size: target vocabulary size (special tokens included).
    """
    sentences = [sentence for sentence in sentences if sentence.strip()]
    if not sentences:
        raise ValueError("sentences must hold at least one non-empty sentence to learn a vocabulary from.")
    output_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizer(vocab=word_piece_vocab(sentences, vocab_size), do_lower_case=True)
    tokenizer.save_pretrained(output_dir)
    return tokenizer


def seeded_model(model_class: type[PreTrainedModel], config: PretrainedConfig, seed: int) -> PreTrainedModel:
    """``model_class(config)`` with weights drawn from ``seed``; the caller's CPU generator is left as it was.

    Args:
        model_class: the transformers model class to initialise.
        config: its configuration.
        seed: seed for the weight initialisation.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return model_class(config)


def build_tiny_encoder(
    output_dir: str | Path, sentences: Iterable[str], vocab_size: int = 8000, seed: int = 42, **config_kwargs: Any
) -> Path:
    """Write a tiny BERT (random weights, ~1.5 M parameters with :data:`TINY_BERT`'s sizes) and a WordPiece tokenizer
    whose vocabulary comes from ``sentences``: what ``--tiny`` recipes, tests and the offline demo start from. The
    folder loads like any checkpoint (``SharedEncoder(output_dir)``); the same ``sentences`` and ``seed`` give
    byte-identical files.

    Args:
        output_dir: folder to write ``config.json``, ``model.safetensors`` and the tokenizer files into.
        sentences: text to take the lower-cased vocabulary from (see :func:`word_piece_vocab`).
        vocab_size: target vocabulary size (special tokens included).
        seed: seed for the weight initialisation.
        **config_kwargs: ``transformers.BertConfig`` settings that replace :data:`TINY_BERT`'s (e.g.
            ``hidden_size=32``); ``hidden_size`` must be a multiple of ``num_attention_heads``.

    Example:
        ::

            from sbert_nonling.models import build_tiny_encoder
            from sbert_nonling import SharedEncoder

            path = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."])
            encoder = SharedEncoder(str(path), max_seq_length=32)
    """
    sizes = {**TINY_BERT, **config_kwargs}
    if sizes["hidden_size"] % sizes["num_attention_heads"]:
        raise ValueError(
            f"hidden_size={sizes['hidden_size']} must be divisible by "
            f"num_attention_heads={sizes['num_attention_heads']}."
        )
    output_dir = Path(output_dir)
    tokenizer = save_word_piece_tokenizer(output_dir, sentences, vocab_size)
    config = BertConfig(vocab_size=len(tokenizer), **sizes)
    model = seeded_model(BertModel, config, seed)
    model.save_pretrained(output_dir)
    logger.info(f"Tiny encoder ({sum(p.numel() for p in model.parameters()):,} parameters) written to {output_dir}")
    return output_dir


def build_tiny_clip(
    output_dir: str | Path,
    sentences: Iterable[str],
    projection_dim: int = 32,
    hidden_size: int = 32,
    image_size: int = 32,
    seed: int = 42,
) -> Path:
    """Write a tiny random CLIP (a 2-layer text and a 2-layer vision tower, ``projection_dim``-wide embeddings), its
    image processor and a WordPiece tokenizer whose vocabulary comes from ``sentences``: the offline stand-in for
    CLIP ViT-L/14 of the ``--tiny`` KDMCSE / DALR recipes, the tests and the examples. It loads like a Hub CLIP
    (``FrozenCLIP.from_pretrained(output_dir)``); the same ``sentences`` and ``seed`` give the same weights.

    Args:
        output_dir: folder to write the model, image processor and tokenizer into.
        sentences: text to take the lower-cased vocabulary from (see :func:`word_piece_vocab`).
        projection_dim: width of CLIP's image and text embeddings.
        hidden_size: width of both towers.
        image_size: side of the square images the vision tower reads (patches of ``image_size // 2``).
        seed: seed for the weight initialisation.

    Example:
        ::

            from sbert_nonling.models import build_tiny_clip

            path = build_tiny_clip("tiny-clip", ["A dog runs on the beach."], projection_dim=16)
    """
    output_dir = Path(output_dir)
    tokenizer = save_word_piece_tokenizer(output_dir, sentences, 2000)
    CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    ).save_pretrained(output_dir)
    tower = {"hidden_size": hidden_size, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    text_config = {
        **tower,
        "vocab_size": len(tokenizer),
        "max_position_embeddings": 64,
        # CLIP pools the text at its end-of-text token: [SEP] here
        "bos_token_id": tokenizer.cls_token_id,
        "eos_token_id": tokenizer.sep_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    vision_config = {**tower, "image_size": image_size, "patch_size": image_size // 2}
    config = CLIPConfig(text_config=text_config, vision_config=vision_config, projection_dim=projection_dim)
    seeded_model(CLIPModel, config, seed).save_pretrained(output_dir)
    return output_dir


def build_tiny_pixel(output_dir: str | Path, max_patches: int = 64, seed: int = 42, **config_kwargs: Any) -> Path:
    """Write a tiny random PIXEL-architecture encoder (:meth:`PixelEncoder.from_config` with :data:`TINY_PIXEL`'s
    sizes): the offline stand-in for PIXEL-base of the ``--tiny`` Pixel Linguist recipe. It loads like a PIXEL
    checkpoint (``PixelEncoder.from_pretrained(output_dir, max_patches=...)``); the same ``seed`` gives the same
    weights. Unlike the tiny BERT and CLIP, the weights come from torch's global CPU generator seeded with ``seed``,
    which goes on from the draws: a ``--tiny`` Pixel Linguist run has always drawn its encoder first thing after
    ``set_seed(seed)``, and its training draws continue from there.

    Args:
        output_dir: folder to write the ``vit_mae`` checkpoint into.
        max_patches: the patches of one rendered strip.
        seed: seed for the weight initialisation.
        **config_kwargs: ``transformers.ViTMAEConfig`` settings that replace :data:`TINY_PIXEL`'s (e.g.
            ``hidden_size=32``).

    Example:
        ::

            from sbert_nonling import PixelEncoder
            from sbert_nonling.models import build_tiny_pixel

            path = build_tiny_pixel("tiny-pixel", max_patches=16, hidden_size=32)
            encoder = PixelEncoder.from_pretrained(str(path), max_patches=16)
    """
    torch.manual_seed(seed)
    encoder = PixelEncoder.from_config(max_patches=max_patches, **{**TINY_PIXEL, **config_kwargs})
    output_dir = Path(output_dir)
    encoder.save(str(output_dir))
    return output_dir


@contextmanager
def resolve_model(name: str, sentences: Iterable[str] = (), seed: int = 42, **sizes: Any) -> Iterator[str]:
    """The Hub name or folder a model setting loads from: a tiny model name (:data:`TINY_MODELS`) is built into a
    temporary folder, removed when the block ends (load the model inside it), and any other name is given back
    unchanged. ``tiny:bert`` is :func:`build_tiny_encoder`, ``tiny:clip`` :func:`build_tiny_clip` (both with a
    vocabulary from ``sentences``), ``tiny:pixel`` :func:`build_tiny_pixel`; the same ``sentences``, ``seed`` and
    ``sizes`` give the same model. Names starting with ``tiny:`` are reserved: any other is refused.

    Args:
        name: a Hub name, a folder or a tiny model name (e.g. a config's ``model``, ``clip_encoder`` or a teacher).
        sentences: the text a tiny BERT's or CLIP's vocabulary comes from.
        seed: seed for a tiny model's weights.
        **sizes: a tiny model's builder arguments (e.g. ``hidden_size=32``; ``projection_dim`` of a CLIP,
            ``max_patches`` of a PIXEL encoder); unused for any other name.

    Example:
        ::

            from sbert_nonling.models import build_sentence_model, resolve_model

            sentences = ["A man is playing a guitar.", "A woman slices an onion."]
            with resolve_model("tiny:bert", sentences, hidden_size=32) as folder:  # removed after the block
                model = build_sentence_model(folder, pooling="mean")
            print(model.encode(["A dog runs."]).shape)  # (1, 32)
            with resolve_model("bert-base-uncased", sentences) as name:
                print(name)  # bert-base-uncased: any other name is given back as it is
    """
    if not name.startswith("tiny:"):
        yield name
        return
    if name not in TINY_MODELS:
        valid = ", ".join(repr(tiny) for tiny in TINY_MODELS)
        raise ValueError(f"Model {name!r} is not a tiny model; the tiny models are {valid}.")
    with tempfile.TemporaryDirectory(prefix=f"{name.replace(':', '-')}-") as folder:
        if name == "tiny:bert":
            path = build_tiny_encoder(folder, sentences, seed=seed, **sizes)
        elif name == "tiny:clip":
            path = build_tiny_clip(folder, sentences, seed=seed, **sizes)
        else:
            path = build_tiny_pixel(folder, seed=seed, **sizes)
        yield str(path)
