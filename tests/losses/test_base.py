"""The shared loss protocol: config from ``config_keys``, citations from the one ``references.bib``."""

from __future__ import annotations

import pytest

from sbert_nonling import losses
from sbert_nonling.losses.base import LossConfig, bibtex

LOSSES = [getattr(losses, name) for name in losses.__all__ if issubclass(getattr(losses, name), LossConfig)]


def test_every_loss_but_the_head_layer_uses_the_protocol():
    assert len(LOSSES) == len(losses.__all__) - 1


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.__name__)
def test_each_cited_key_is_one_entry_of_references_bib(loss):
    entries = bibtex()
    assert loss.bibtex_keys and set(loss.bibtex_keys) <= set(entries)
    for key in loss.bibtex_keys:
        assert entries[key].startswith("\n@") and f"{{{key}," in entries[key] and entries[key].endswith("}\n")
