from __future__ import annotations

import random
from collections import Counter

import pytest

from sbert_nonling.data.perturbations import (
    KEYBOARD_NEIGHBOURS,
    PERTURBATIONS,
    VISUALLY_SIMILAR,
    PerturbationPairs,
    WordEdit,
    conditional_shuffle,
    perturbation_pairs_dataset,
    random_spans,
    shuffle_words,
    span_pairs_dataset,
)

TEXT = "The quick brown fox jumps over the lazy dog, while the cat sleeps on the warm mat."


def test_character_edits_change_what_they_say():
    inserted = PERTURBATIONS["insert"](TEXT, random.Random(0), rate=1.0)
    deleted = PERTURBATIONS["delete"](TEXT, random.Random(0), rate=1.0)
    assert len(inserted) == len(TEXT) + len(TEXT.split())
    assert len(deleted) == len(TEXT) - len(TEXT.split())
    swapped = PERTURBATIONS["swap"](TEXT, random.Random(0), rate=1.0)
    assert len(swapped) == len(TEXT) and Counter(swapped) == Counter(TEXT) and swapped != TEXT
    assert PERTURBATIONS["insert"](TEXT, random.Random(0), rate=0.0) == TEXT
    assert PERTURBATIONS["delete"]("a b", random.Random(0), rate=1.0) == "a b"  # words of one character are kept


def test_a_word_edit_draws_once_per_word_and_keeps_short_words_and_spacing():
    def shout(word: str, rng: random.Random) -> str:
        return word.upper()

    rng, reference = random.Random(4), random.Random(4)
    edited = WordEdit(shout, min_length=3)("a  man\tplays a guitar", rng, rate=0.5)
    draws = [reference.random() < 0.5 for _ in range(5)]
    expected = [
        word.upper() if draw and len(word) >= 3 else word
        for word, draw in zip(["a", "man", "plays", "a", "guitar"], draws)
    ]
    assert edited.split() == expected and "  " in edited and "\t" in edited
    assert rng.random() == reference.random()  # nothing drawn beyond one draw per word
    with pytest.raises(ValueError, match=r"rate=1.5 must lie in \[0, 1\]"):
        WordEdit(shout)("a man", random.Random(0), rate=1.5)


@pytest.mark.parametrize("kind", ["visual", "keyboard"])
def test_substitutions_use_their_tables(kind):
    table = VISUALLY_SIMILAR if kind == "visual" else KEYBOARD_NEIGHBOURS
    words = "hello world".split()
    out = PERTURBATIONS[f"substitute_{kind}"]("hello world", random.Random(1), rate=1.0).split()
    for original, perturbed in zip(words, out):
        # one letter replaced by a character of its table entry (a few visual entries are two letters wide)
        prefix = next(i for i, (a, b) in enumerate(zip(original, perturbed + " ")) if a != b)
        replacement = perturbed[prefix : prefix + len(perturbed) - len(original) + 1]
        assert replacement in table[original[prefix]]
    assert KEYBOARD_NEIGHBOURS["s"] == "adewxz" and KEYBOARD_NEIGHBOURS["q"] == "aw" and "0" in VISUALLY_SIMILAR["o"]
    assert PERTURBATIONS[f"substitute_{kind}"]("123", random.Random(0), rate=1.0) == "123"  # no letter to replace


def test_shuffles_keep_the_words():
    shuffled = shuffle_words(TEXT, random.Random(3))
    assert Counter(shuffled.split()) == Counter(TEXT.split()) and shuffled != TEXT
    conditional = conditional_shuffle(TEXT, random.Random(3))
    parts = [
        part.split()
        for part in ("The quick brown fox jumps over the lazy dog,", "while the cat sleeps on the warm mat.")
    ]
    out_words = conditional.split()
    assert Counter(out_words) == Counter(TEXT.split())
    assert out_words[0] == parts[0][0] and out_words[len(parts[0]) - 1] == parts[0][-1]
    assert out_words[len(parts[0])] == parts[1][0] and out_words[-1] == parts[1][-1]


def test_spans_come_from_the_document():
    words = TEXT.split()
    first, second = random_spans(TEXT, random.Random(5), min_words=3, max_words=6)
    for span in (first, second):
        span_words = span.split()
        assert 3 <= len(span_words) <= 6
        assert any(words[i : i + len(span_words)] == span_words for i in range(len(words)))
    with pytest.raises(ValueError, match="at least one word"):
        random_spans("   ", random.Random(0))


def test_span_pairs_are_seeded_per_document():
    documents = [TEXT, "One two three four five six seven eight nine ten eleven twelve."]
    first = span_pairs_dataset(documents, min_words=3, max_words=5, seed=1)
    assert first.column_names == ["anchor", "positive"] and len(first) == 2
    assert first.to_dict() == span_pairs_dataset(documents, min_words=3, max_words=5, seed=1).to_dict()
    assert span_pairs_dataset(documents[::-1], min_words=3, max_words=5, seed=1)[1] == first[0]  # per document
    assert first.to_dict() != span_pairs_dataset(documents, min_words=3, max_words=5, seed=2).to_dict()
    for row, document in zip(first, documents):
        assert row["anchor"] in document and row["positive"] in document


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "a",
        "🙂 emoji 🎉 text",
        "x" * 10_000,
        "mixed Ελληνικά 中文 عربي",
        "control\x00chars\x07",
        "lone \ud800 surrogate",
    ],
)
def test_every_perturbation_handles_odd_text(text):
    for name, perturbation in PERTURBATIONS.items():
        assert isinstance(perturbation(text, random.Random(0), 0.5), str), name


def test_pairs_are_deterministic_per_text_and_seed():
    pairs = PerturbationPairs(["substitute_visual", "swap"], rate=0.5, seed=7)
    batch = pairs({"text": [TEXT, "short one"]})
    assert batch["anchor"] == [TEXT, "short one"] and batch["positive"][0] != TEXT
    assert pairs({"text": [TEXT]})["positive"][0] == batch["positive"][0]  # same text, same pair, any batch
    assert PerturbationPairs(["substitute_visual", "swap"], rate=0.5, seed=8).perturb(TEXT) != batch["positive"][0]
    dataset = perturbation_pairs_dataset([TEXT] * 3, ["shuffle"], seed=7)
    assert dataset[0]["positive"] == dataset[2]["positive"] and set(dataset[0]) == {"anchor", "positive"}
    with pytest.raises(ValueError, match=r"Unknown perturbation\(s\) \['typo'\]"):
        PerturbationPairs(["typo"])
    with pytest.raises(ValueError, match="rate=2 must lie in"):
        PerturbationPairs(["swap"], rate=2)
