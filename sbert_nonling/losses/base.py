"""What every loss here shares: ``get_config_dict`` from ``config_keys`` and ``citation`` from ``bibtex_keys``."""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from typing import Any, ClassVar


@cache
def bibtex() -> dict[str, str]:
    """The entries of ``references.bib`` (the papers the losses cite, each stored once) by key, each as
    ``\\n@...}\\n``."""
    text = (files(__package__) / "references.bib").read_text(encoding="utf-8")
    entries = (entry.strip() for entry in re.split(r"(?m)^(?=@\w+\{)", text)[1:])
    return {entry[entry.index("{") + 1 : entry.index(",")]: f"\n{entry}\n" for entry in entries}


class LossConfig:
    """Mixin (first base) of the package's losses: ``get_config_dict()``, the hyper-parameters of the model card, holds
    the attributes named in ``config_keys`` (as sentence-transformers' ``Module``); ``citation`` joins the BibTeX
    entries named in ``bibtex_keys``. Losses override either only to add a derived entry."""

    config_keys: ClassVar[tuple[str, ...]] = ()
    bibtex_keys: ClassVar[tuple[str, ...]] = ()

    def get_config_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.config_keys}

    @property
    def citation(self) -> str:
        return "".join(bibtex()[key] for key in self.bibtex_keys)
