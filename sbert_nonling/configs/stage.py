"""StageConfig: the optimizer settings of one stage of a multi-stage method."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sbert_nonling.configs.base import Settings, setting


@dataclass
class StageConfig(Settings):
    """One stage's optimizer settings, nested in its method's config under the stage's name (multitask's
    ``contrastive`` / ``multitask``, Pixel Linguist's ``visual`` / ``topical`` / ``reasoning`` / ``parallel``); a
    recipe gives what differs (``"contrastive": {"batch_size": 128}``), ``--set`` a dotted key
    (``contrastive.batch_size=128``).

    Example::

        from sbert_nonling.configs import StageConfig

        stage = StageConfig(learning_rate=1e-5, batch_size=32, epochs=10)
        print(stage.replace(max_steps=0))  # ... max_steps=0 ...: the stage is left out
    """

    is_stage: ClassVar[bool] = True

    learning_rate: float = setting(3e-5, "AdamW learning rate of the stage", minimum=0.0)
    batch_size: int = setting(64, "batch size per device (per task where the stage mixes tasks)", minimum=1)
    epochs: int = setting(1, "passes over the stage's data (unless max_steps is set)", minimum=1)
    max_steps: int = setting(-1, "optimizer steps of the stage (-1: the epochs; 0: leave the stage out)", minimum=-1)
    warmup_steps: int = setting(0, "linear warmup steps", minimum=0)

    def capped(self, max_steps: int) -> StageConfig:
        """The stage stopped after at most ``max_steps`` optimizer steps (a stage left out stays left out).

        Args:
            max_steps: the most optimizer steps the stage may run.
        """
        return self.replace(max_steps=max_steps if self.max_steps < 0 else min(self.max_steps, max_steps))
