"""Build a small, randomly initialised BERT encoder folder offline (vocabulary taken from the user's own text)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer
from transformers import BertConfig, BertModel, BertTokenizer

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


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


def build_tiny_encoder(
    output_dir: str | Path,
    sentences: Iterable[str],
    vocab_size: int = 8000,
    hidden_size: int = 128,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 2,
    intermediate_size: int = 512,
    max_position_embeddings: int = 512,
    seed: int = 42,
) -> Path:
    """Write a tiny BERT (random weights, ~1.5 M parameters by default) and a WordPiece tokenizer whose vocabulary
    comes from ``sentences``: what ``--tiny`` recipes, tests and the offline demo start from. The folder loads like any
    checkpoint (``SharedEncoder(output_dir)``); the same ``sentences`` and ``seed`` give byte-identical files.

    Args:
        output_dir: folder to write ``config.json``, ``model.safetensors`` and the tokenizer files into.
        sentences: text to take the lower-cased vocabulary from (see :func:`word_piece_vocab`).
        vocab_size: target vocabulary size (special tokens included).
        hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings:
            the BERT configuration.
        seed: seed for the weight initialisation.

    Example:
        ::

            from sbert_nonling.models import build_tiny_encoder
            from sbert_nonling import SharedEncoder

            path = build_tiny_encoder("tiny-bert", ["A man is playing a guitar.", "A woman slices an onion."])
            encoder = SharedEncoder(str(path), max_seq_length=32)
    """
    sentences = [sentence for sentence in sentences if sentence.strip()]
    if not sentences:
        raise ValueError("build_tiny_encoder needs at least one non-empty sentence to learn a vocabulary from.")
    if hidden_size % num_attention_heads:
        raise ValueError(f"hidden_size={hidden_size} must be divisible by num_attention_heads={num_attention_heads}.")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    tokenizer = BertTokenizer(vocab=word_piece_vocab(sentences, vocab_size), do_lower_case=True)
    tokenizer.save_pretrained(output_dir)

    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
    )
    with torch.random.fork_rng(devices=[]):  # the caller's CPU generator is left as it was
        torch.manual_seed(seed)
        model = BertModel(config)
    model.save_pretrained(output_dir)
    logger.info(f"Tiny encoder ({sum(p.numel() for p in model.parameters()):,} parameters) written to {output_dir}")
    return output_dir
