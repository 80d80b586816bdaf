"""Input checks shared by the router, the data readers and the evaluators: one clear ValueError per bad item."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every unpaired surrogate code point replaced by U+FFFD (a surrogate pair written as two code
    points is joined into one character); such strings cannot be encoded as UTF-8 by tokenizers or renderers."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def split_lines(text: str) -> list[str]:
    """Lines of a text file's content, split at ``\\n`` only (``open`` has already turned ``\\r\\n`` and ``\\r`` into it).

    ``str.splitlines`` would also split at vertical tabs, form feeds, U+001C-U+001E, U+0085, U+2028 and U+2029, characters that can
    sit inside one sentence of a line-based file and would shift every later line. A final empty line is dropped.
    """
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def check_sentence(sentence: Any, where: str) -> str:
    """Return ``sentence`` if it is a non-blank string, else raise a ValueError that names ``where`` it came from."""
    if sentence is None:
        raise ValueError(f"{where} is None; expected a non-empty string.")
    if not isinstance(sentence, str):
        raise ValueError(f"{where} is a {type(sentence).__name__} ({sentence!r:.80}); expected a non-empty string.")
    if not sentence.strip():
        raise ValueError(f"{where} is empty or whitespace-only ({sentence!r}); expected a non-empty string.")
    return sentence


def check_text_inputs(inputs: Sequence[Any], source: str = "input") -> None:
    """Check a batch of sentences or sentence pairs to encode, naming the first offending item by its index.

    Every item (every part of a pair) must be a ``str``; empty and whitespace-only strings are valid inputs, encoded
    as the tokenizer or renderer encodes them (``""`` is ``[CLS] [SEP]`` to a BERT tokenizer, as in plain
    sentence-transformers). Data files are stricter: their readers reject blank fields with :func:`check_sentence`.
    """
    for index, item in enumerate(inputs):
        parts = item if isinstance(item, (tuple, list)) else (item,)
        for part in parts:
            if part is None:
                raise ValueError(f"{source} {index} is None; expected a string.")
            if not isinstance(part, str):
                raise ValueError(f"{source} {index} holds a {type(part).__name__} ({part!r:.80}); expected a string.")
