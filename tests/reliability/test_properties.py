"""Property-based tests (hypothesis): the PIXEL renderer and the text perturbations on arbitrary Unicode.

Texts mix every Unicode category, lone surrogates (category Cs), C0 / C1 control characters, line and paragraph
separators and emoji (including ZWJ sequences and skin-tone modifiers).
"""

from __future__ import annotations

import random
from collections import Counter
from functools import cache

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sbert_nonling.data.perturbations import PERTURBATIONS, PerturbationPairs, random_spans
from sbert_nonling.modules.pixel_renderer import PixelRenderer

MAX_PATCHES, PATCH = 16, 16
EMOJI = ["\U0001f600", "\U0001f469\u200d\U0001f4bb", "\U0001f44d\U0001f3fd", "\u2764\ufe0f", "\U0001f1e9\U0001f1ea"]
CHARACTERS = st.one_of(
    st.characters(codec=None),  # every category but Cs
    st.characters(categories=["Cs"]),  # lone surrogates
    st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs"]),  # control, format, separators
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),  # plenty of ordinary ASCII words
)
TEXTS = st.one_of(
    st.lists(st.one_of(CHARACTERS, st.sampled_from(EMOJI)), max_size=80).map("".join),
    st.text(CHARACTERS, min_size=200, max_size=400),  # longer than the strip
)
SETTINGS = settings(max_examples=60, deadline=None)
CHARACTER_PERTURBATIONS = ["insert", "delete", "substitute_visual", "substitute_keyboard", "swap"]
SHUFFLES = ["shuffle", "conditional_shuffle"]


@cache
def renderer() -> PixelRenderer:
    return PixelRenderer(max_patches=MAX_PATCHES)


@SETTINGS
@given(TEXTS)
def test_render_gives_a_valid_strip_with_the_eos_patch_last(text):
    strip, num_patches = renderer().render(text)
    assert strip.shape == (PATCH, MAX_PATCHES * PATCH) and strip.dtype == np.uint8
    assert 1 <= num_patches <= MAX_PATCHES
    eos = slice((num_patches - 1) * PATCH, num_patches * PATCH)
    assert (strip[:, eos] == 0).all()  # the end-of-sequence patch is all black
    assert (strip[:, num_patches * PATCH :] == 255).all()  # white after it
    again, again_patches = renderer().render(text)
    assert again_patches == num_patches and np.array_equal(again, strip)


@SETTINGS
@given(st.lists(TEXTS, min_size=1, max_size=4))
def test_preprocess_shapes_and_masks(texts):
    features = renderer().preprocess(texts)
    pixel_values, mask = features["pixel_values"], features["attention_mask"]
    assert pixel_values.shape == (len(texts), 3, PATCH, MAX_PATCHES * PATCH) and pixel_values.dtype == torch.float32
    assert mask.shape == (len(texts), MAX_PATCHES) and mask.dtype == torch.long
    assert ((pixel_values >= 0) & (pixel_values <= 1)).all()
    for row, text in enumerate(texts):
        strip, num_patches = renderer().render(text)
        expected_mask = torch.zeros(MAX_PATCHES, dtype=torch.long)
        expected_mask[:num_patches] = 1  # the text patches and the EOS patch, then nothing
        assert torch.equal(mask[row], expected_mask)
        assert torch.equal(pixel_values[row, 0], torch.from_numpy(strip).float() / 255)
        assert torch.equal(pixel_values[row, 0], pixel_values[row, 2])


@SETTINGS
@given(TEXTS)
def test_nul_characters_are_removed(text):
    """Unlike PIXEL's renderer, which reads the text as a C string and drops everything after a U+0000."""
    strip, num_patches = renderer().render(text)
    expected, expected_patches = renderer().render(text.replace("\x00", ""))
    assert num_patches == expected_patches and np.array_equal(strip, expected)


@pytest.mark.parametrize("name", list(PERTURBATIONS))
@SETTINGS
@given(text=TEXTS, seed=st.integers(0, 2**32), rate=st.floats(0, 1))
def test_perturbations_are_seeded_strings(name, text, seed, rate):
    perturb = PERTURBATIONS[name]
    out = perturb(text, random.Random(seed), rate)
    assert isinstance(out, str)
    assert perturb(text, random.Random(seed), rate) == out  # same seed, same output
    if name in SHUFFLES:
        assert Counter(out.split()) == Counter(text.split())  # the same words, reordered
    else:
        assert len(out.split()) == len(text.split())  # edits stay inside words


@pytest.mark.parametrize("name", CHARACTER_PERTURBATIONS)
@SETTINGS
@given(text=TEXTS, seed=st.integers(0, 2**32))
def test_rate_zero_changes_nothing(name, text, seed):
    assert PERTURBATIONS[name](text, random.Random(seed), 0.0) == text


@SETTINGS
@given(text=TEXTS, seed=st.integers(0, 2**32))
def test_rate_one_edits_every_word_as_documented(text, seed):
    words = text.split()
    inserted = PERTURBATIONS["insert"](text, random.Random(seed), 1.0)
    assert len(inserted) == len(text) + len(words)
    deleted = PERTURBATIONS["delete"](text, random.Random(seed), 1.0)
    assert len(deleted) == len(text) - sum(len(word) >= 2 for word in words)
    swapped = PERTURBATIONS["swap"](text, random.Random(seed), 1.0)
    assert sorted(swapped) == sorted(text)


@SETTINGS
@given(text=TEXTS, seed=st.integers(0, 2**32))
def test_perturbation_pairs_are_deterministic_per_text(text, seed):
    pairs = PerturbationPairs(list(PERTURBATIONS), rate=0.5, seed=seed)
    batch = pairs({"text": [text, text]})
    assert batch["anchor"] == [text, text] and batch["positive"][0] == batch["positive"][1]
    assert PerturbationPairs(list(PERTURBATIONS), rate=0.5, seed=seed).perturb(text) == batch["positive"][0]


@SETTINGS
@given(document=TEXTS, seed=st.integers(0, 2**32), min_words=st.integers(1, 8), extra=st.integers(0, 64))
def test_random_spans_are_seeded_runs_of_words(document, seed, min_words, extra):
    words = document.split()
    if not words:
        with pytest.raises(ValueError, match="at least one word"):
            random_spans(document, random.Random(seed), min_words, min_words + extra)
        return
    spans = random_spans(document, random.Random(seed), min_words, min_words + extra)
    assert spans == random_spans(document, random.Random(seed), min_words, min_words + extra)
    for span in spans:
        assert isinstance(span, str)
        span_words = span.split()
        assert min(len(words), min_words) <= len(span_words) <= min_words + extra
        starts = [i for i in range(len(words) - len(span_words) + 1) if words[i : i + len(span_words)] == span_words]
        assert starts, "a span is a contiguous run of the document's words"
