"""Visually grounded text perturbations (Pixel Linguist): seeded character typos, word shuffles and document spans,
each a pure function ``f(text, rng, ...) -> str`` of a ``random.Random``."""

from __future__ import annotations

import functools
import random
import re
import zlib
from collections.abc import Callable
from typing import Any, Literal, get_args

from datasets import Dataset

#: Characters (or pairs) that look alike when rendered: the "visually similar" substitutions of the typo attacks.
VISUALLY_SIMILAR: dict[str, tuple[str, ...]] = {
    "a": ("@", "ɑ", "а"),
    "b": ("6", "ь"),
    "c": ("¢", "с"),
    "d": ("ԁ", "cl"),
    "e": ("3", "е", "é"),
    "g": ("9", "q"),
    "h": ("һ",),
    "i": ("1", "l", "!", "í"),
    "j": ("ј",),
    "k": ("κ", "lc"),
    "l": ("1", "I", "|"),
    "m": ("rn", "nn"),
    "n": ("ո",),
    "o": ("0", "о", "ö"),
    "p": ("р",),
    "q": ("g",),
    "s": ("5", "$", "ѕ"),
    "t": ("7", "+"),
    "u": ("υ", "ü"),
    "v": ("ν",),
    "w": ("vv",),
    "x": ("×", "х"),
    "y": ("у", "ý"),
    "z": ("2",),
}
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEY_AT = {(row, column): key for row, keys in enumerate(_QWERTY_ROWS) for column, key in enumerate(keys)}
#: Keys next to each letter on a staggered QWERTY keyboard: left / right, the two above, the two below.
KEYBOARD_NEIGHBOURS: dict[str, str] = {
    key: "".join(
        sorted(
            _KEY_AT[r + dr, c + dc]
            for dr, dc in ((0, -1), (0, 1), (-1, 0), (-1, 1), (1, -1), (1, 0))
            if (r + dr, c + dc) in _KEY_AT
        )
    )
    for (r, c), key in _KEY_AT.items()
}
_WORD = re.compile(r"\S+")
_SUBSENTENCE_END = re.compile(r"(?<=[,.;:!?])\s+")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: The substitutions of :func:`substitute_characters`: look-alike characters or QWERTY neighbours.
SubstitutionKind = Literal["visual", "keyboard"]


def _check_rate(rate: float) -> None:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate={rate!r} must lie in [0, 1] (the share of words perturbed).")


def _edit_words(
    text: str, rng: random.Random, rate: float, edit: Callable[[str, random.Random], str], min_length: int = 1
) -> str:
    """``edit`` applied to each word with probability ``rate`` (a draw per word), words shorter than ``min_length``
    kept."""
    _check_rate(rate)

    def edit_word(match: re.Match[str]) -> str:
        word = match.group()
        if rng.random() < rate and len(word) >= min_length:
            return edit(word, rng)
        return word

    return _WORD.sub(edit_word, text)


def insert_characters(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """In each word with probability ``rate``, insert one random lower-case letter at a random position.

    Args:
        text: the text to perturb.
        rng: the seeded generator every draw comes from.
        rate: the probability that a word is edited, in [0, 1].
    """

    def insert(word: str, r: random.Random) -> str:
        i = r.randint(0, len(word))
        return word[:i] + r.choice(LETTERS) + word[i:]

    return _edit_words(text, rng, rate, insert)


def delete_characters(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """In each word of two or more characters with probability ``rate``, delete one random character.

    Args:
        text: the text to perturb.
        rng: the seeded generator every draw comes from.
        rate: the probability that a word is edited, in [0, 1].
    """

    def delete(word: str, r: random.Random) -> str:
        i = r.randrange(len(word))
        return word[:i] + word[i + 1 :]

    return _edit_words(text, rng, rate, delete, min_length=2)


def substitute_characters(text: str, rng: random.Random, rate: float = 0.1, kind: SubstitutionKind = "visual") -> str:
    """In each word with probability ``rate``, replace one letter by a look-alike (``"visual"``) or a QWERTY
    neighbour.

    Args:
        text: the text to perturb.
        rng: the seeded generator every draw comes from.
        rate: the probability that a word is edited, in [0, 1].
        kind: ``"visual"`` (look-alike characters, :data:`VISUALLY_SIMILAR`) or ``"keyboard"`` (QWERTY neighbours).
    """
    if kind not in get_args(SubstitutionKind):
        raise ValueError(f"kind={kind!r} must be one of {list(get_args(SubstitutionKind))}.")
    table = VISUALLY_SIMILAR if kind == "visual" else KEYBOARD_NEIGHBOURS

    def substitute(word: str, r: random.Random) -> str:
        positions = [i for i, character in enumerate(word) if character.lower() in table]
        if not positions:
            return word
        i = r.choice(positions)
        return word[:i] + r.choice(table[word[i].lower()]) + word[i + 1 :]

    return _edit_words(text, rng, rate, substitute)


def swap_neighbours(text: str, rng: random.Random, rate: float = 0.1) -> str:
    """In each word of two or more characters with probability ``rate``, swap two adjacent characters.

    Args:
        text: the text to perturb.
        rng: the seeded generator every draw comes from.
        rate: the probability that a word is edited, in [0, 1].
    """

    def swap(word: str, r: random.Random) -> str:
        i = r.randrange(len(word) - 1)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    return _edit_words(text, rng, rate, swap, min_length=2)


def shuffle_words(text: str, rng: random.Random) -> str:
    """All words of the text in a random order (single spaces).

    Args:
        text: the text to shuffle.
        rng: the seeded generator of the order.
    """
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def conditional_shuffle(text: str, rng: random.Random) -> str:
    """Within each sub-sentence (split after , . ; : ! ?), keep the first and last word and shuffle the rest.

    Args:
        text: the text to shuffle.
        rng: the seeded generator of the orders.
    """
    parts = []
    for part in _SUBSENTENCE_END.split(text.strip()):
        words = part.split()
        if len(words) > 3:
            middle = words[1:-1]
            rng.shuffle(middle)
            words = [words[0], *middle, words[-1]]
        parts.append(" ".join(words))
    return " ".join(part for part in parts if part)


def random_spans(document: str, rng: random.Random, min_words: int = 5, max_words: int = 64) -> tuple[str, str]:
    """Two random, possibly overlapping word spans of one document (topical alignment's positive pair).

    Args:
        document: the document, split into words at whitespace.
        rng: the seeded generator of the span lengths and starts.
        min_words: the shortest span, in words (shorter documents give the whole document).
        max_words: the longest span, in words.
    """
    if not 1 <= min_words <= max_words:
        raise ValueError(f"Need 1 <= min_words <= max_words, got {min_words} and {max_words}.")
    words = document.split()
    if not words:
        raise ValueError("random_spans needs a document with at least one word.")
    spans = []
    for _ in range(2):
        length = min(len(words), rng.randint(min_words, max_words))
        start = rng.randint(0, len(words) - length)
        spans.append(" ".join(words[start : start + length]))
    return spans[0], spans[1]


def _whole_text(perturbation: Callable[[str, random.Random], str]) -> Callable[..., str]:
    """``perturbation`` with the common signature ``f(text, rng, rate)``, ``rate`` unused (it edits the whole text)."""

    def perturb(text: str, rng: random.Random, rate: float | None = None) -> str:
        return perturbation(text, rng)

    return perturb


#: Name -> perturbation ``f(text, rng, rate) -> str``, as :class:`PerturbationPairs` calls them.
PERTURBATIONS: dict[str, Callable[..., str]] = {
    "insert": insert_characters,
    "delete": delete_characters,
    "substitute_visual": functools.partial(substitute_characters, kind="visual"),
    "substitute_keyboard": functools.partial(substitute_characters, kind="keyboard"),
    "swap": swap_neighbours,
    "shuffle": _whole_text(shuffle_words),
    "conditional_shuffle": _whole_text(conditional_shuffle),
}


class PerturbationPairs:
    """A ``Dataset.set_transform`` function: each text becomes (anchor = text, positive = perturbed text).

    Seeded by ``seed`` and a CRC32 of the text (the same pairs in every run); applies :data:`PERTURBATIONS` in order.

    Args:
        perturbations: names of :data:`PERTURBATIONS`, applied in this order.
        rate: the share of words each character perturbation edits, in [0, 1].
        seed: the run's seed, combined with each text's CRC32.
        text_column: the column holding the texts.

    Example::

        from datasets import Dataset
        from sbert_nonling.data.perturbations import PerturbationPairs

        dataset = Dataset.from_dict({"text": ["A man is playing a guitar."]})
        dataset.set_transform(PerturbationPairs(["substitute_visual", "swap"], rate=0.3))
        dataset[0]  # {"anchor": "A man is playing a guitar.", "positive": "A mаn is plyaing a guitar."}
    """

    def __init__(self, perturbations: list[str], rate: float = 0.1, seed: int = 42, text_column: str = "text") -> None:
        unknown = [name for name in perturbations if name not in PERTURBATIONS]
        if unknown or not perturbations:
            raise ValueError(
                f"Unknown perturbation(s) {unknown or perturbations}; choose from {sorted(PERTURBATIONS)}."
            )
        _check_rate(rate)
        self.perturbations = list(perturbations)
        self.rate = rate
        self.seed = seed
        self.text_column = text_column

    def perturb(self, text: str) -> str:
        """``text`` with every perturbation applied in order, from one generator seeded by ``seed`` and the text.

        Args:
            text: the text to perturb.
        """
        rng = _text_rng(self.seed, text)
        for name in self.perturbations:
            text = PERTURBATIONS[name](text, rng, self.rate)
        return text

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[str]]:
        texts = batch[self.text_column]
        return {"anchor": list(texts), "positive": [self.perturb(text) for text in texts]}


def perturbation_pairs_dataset(
    sentences: list[str], perturbations: list[str], rate: float = 0.1, seed: int = 42
) -> Dataset:
    """``sentences`` as (anchor, positive) pairs made on the fly by :class:`PerturbationPairs`.

    Args:
        sentences: the sentences, one row each.
        perturbations: names of :data:`PERTURBATIONS`, applied in order.
        rate: the share of words each character perturbation edits, in [0, 1].
        seed: the run's seed.
    """
    dataset = Dataset.from_dict({"text": list(sentences)})
    dataset.set_transform(PerturbationPairs(perturbations, rate=rate, seed=seed))
    return dataset


def span_pairs_dataset(documents: list[str], min_words: int = 5, max_words: int = 64, seed: int = 42) -> Dataset:
    """Topical alignment data: two :func:`random_spans` of each document as (anchor, positive), seeded per document.

    Args:
        documents: the documents, one row each.
        min_words: the shortest span, in words.
        max_words: the longest span, in words.
        seed: the run's seed, combined with each document's CRC32.
    """
    spans = [random_spans(document, _text_rng(seed, document), min_words, max_words) for document in documents]
    return Dataset.from_dict(
        {"anchor": [anchor for anchor, _ in spans], "positive": [positive for _, positive in spans]}
    )


def _text_rng(seed: int, text: str) -> random.Random:
    return random.Random(seed * 2**32 + zlib.crc32(text.encode("utf-8", "surrogatepass")))
