"""SimCSEConfig: unsupervised and supervised SimCSE (Gao et al., 2021)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.registry import MethodSpec, register_method
from sbert_nonling.configs.sentence_encoder import SingleRunConfig


@dataclass
class SimCSEConfig(SingleRunConfig):
    """SimCSE: defaults are the unsupervised BERT-base row of the paper: bert-base-uncased, [CLS] pooling with a
    training-only MLP, temperature 0.05, max 32 tokens, batch 64, lr 3e-5, 1 epoch over the wiki sentences, each
    sentence its own positive under two dropout masks. The supervised row is the ``simcse-sup`` recipe: NLI triplets
    (``data="nli"``), the MLP kept at inference (``pooling="cls_mlp"``, ``text_loss.training_head="none"``), batch
    512, lr 5e-5, 3 epochs. Paper: https://arxiv.org/abs/2104.08821. See
    :class:`~sbert_nonling.configs.sentence_encoder.SingleRunConfig`.

    Example::

        from sbert_nonling.configs import SimCSEConfig

        supervised = SimCSEConfig(data="nli", pooling="cls_mlp", batch_size=512, learning_rate=5e-5, epochs=3)
        supervised = supervised.replace(**{"text_loss.training_head": "none"})
    """

    method: ClassVar[str] = "simcse"


register_method(
    MethodSpec(
        SimCSEConfig,
        builder="sbert_nonling.methods.simcse:build_simcse",
        training_sources=("text_file", "nli_file"),
    )
)
