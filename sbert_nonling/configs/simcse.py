"""SimCSEConfig: unsupervised and supervised SimCSE (Gao et al., 2021)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import setting
from sbert_nonling.configs.sentence_encoder import SingleRunConfig


@dataclass
class SimCSEConfig(SingleRunConfig):
    """SimCSE: defaults are the unsupervised BERT-base row (METHODS.md); the supervised row is the ``simcse-sup`` recipe
    (``data="nli"``, ``pooling="cls_mlp"``, ``training_head="none"``, batch 512, lr 5e-5, 3 epochs).
    Paper: https://arxiv.org/abs/2104.08821. See :class:`~sbert_nonling.configs.sentence_encoder.SingleRunConfig`."""

    method: ClassVar[str] = "simcse"

    warmup_steps: int = setting(0, "linear warmup steps of the text learning rate", minimum=0)
