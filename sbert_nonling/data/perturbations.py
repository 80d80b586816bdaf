"""Visually grounded text perturbations (Pixel Linguist): seeded character typos, word shuffles and document spans,
each a pure function ``f(text, rng, ...) -> str`` of a ``random.Random``."""

from __future__ import annotations

import functools
import random
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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


def _check_rate(rate: float) -> None:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate={rate!r} must lie in [0, 1] (the share of words perturbed).")


class WordEdit:
    """A character perturbation ``f(text, rng, rate) -> str`` made of a one-word edit: each word (a run of non-space
    characters) is edited with probability ``rate``, one draw of ``rng`` per word in order; words shorter than
    ``min_length`` and the spacing are kept. :data:`PERTURBATIONS` holds the typo attacks built this way.

    Args:
        edit: the edit of one word, ``edit(word, rng) -> str``, drawing from the same generator.
        min_length: the shortest word that is edited.

    Example::

        import random
        from sbert_nonling.data.perturbations import WordEdit

        def upper(word: str, rng: random.Random) -> str:
            return word.upper()

        WordEdit(upper)("a man plays a guitar", random.Random(0), rate=0.5)  # e.g. "a MAN plays a GUITAR"
    """

    def __init__(self, edit: Callable[[str, random.Random], str], min_length: int = 1) -> None:
        self.edit = edit
        self.min_length = min_length

    def __call__(self, text: str, rng: random.Random, rate: float = 0.1) -> str:
        """``text`` with each word edited with probability ``rate``.

        Args:
            text: the text to perturb.
            rng: the seeded generator every draw comes from.
            rate: the probability that a word is edited, in [0, 1].
        """
        _check_rate(rate)

        def edit_word(match: re.Match[str]) -> str:
            word = match.group()
            if rng.random() < rate and len(word) >= self.min_length:
                return self.edit(word, rng)
            return word

        return _WORD.sub(edit_word, text)


def _insert_letter(word: str, rng: random.Random) -> str:
    """``word`` with a random lower-case letter inserted at a random position."""
    i = rng.randint(0, len(word))
    return word[:i] + rng.choice(LETTERS) + word[i:]


def _delete_character(word: str, rng: random.Random) -> str:
    """``word`` without one of its characters, chosen at random."""
    i = rng.randrange(len(word))
    return word[:i] + word[i + 1 :]


def _swap_neighbours(word: str, rng: random.Random) -> str:
    """``word`` with two adjacent characters, chosen at random, swapped (a word of two or more characters)."""
    i = rng.randrange(len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _substitute_letter(word: str, rng: random.Random, table: Mapping[str, Sequence[str]]) -> str:
    """``word`` with one of the letters ``table`` lists (chosen at random) replaced by one of its entries; ``word`` as
    it is where it holds none."""
    positions = [i for i, character in enumerate(word) if character.lower() in table]
    if not positions:
        return word
    i = rng.choice(positions)
    return word[:i] + rng.choice(table[word[i].lower()]) + word[i + 1 :]


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


#: Name -> perturbation ``f(text, rng, rate) -> str``, as :class:`PerturbationPairs` calls them: the character typos
#: (a :class:`WordEdit` each: insert a letter, delete a character of a word of 2+, substitute a look-alike
#: :data:`VISUALLY_SIMILAR` or a QWERTY neighbour :data:`KEYBOARD_NEIGHBOURS`, swap neighbours in a word of 2+) and
#: the word shuffles (``rate`` unused).
PERTURBATIONS: dict[str, Callable[..., str]] = {
    "insert": WordEdit(_insert_letter),
    "delete": WordEdit(_delete_character, min_length=2),
    "substitute_visual": WordEdit(functools.partial(_substitute_letter, table=VISUALLY_SIMILAR)),
    "substitute_keyboard": WordEdit(functools.partial(_substitute_letter, table=KEYBOARD_NEIGHBOURS)),
    "swap": WordEdit(_swap_neighbours, min_length=2),
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
