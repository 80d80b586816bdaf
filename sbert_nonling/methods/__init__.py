"""Method builders: each turns a method's typed config and data into the pieces of an ordinary sentence-transformers
training, a :class:`MethodPlan` of :class:`TrainingStage` s, without writing or evaluating anything; run it in one
call (:meth:`MethodPlan.train`), with your own trainer calls, or with :func:`~sbert_nonling.app.runner.run_method`.
:data:`BUILDERS` names the builder of each method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sbert_nonling.configs import (
    AudioCSEConfig,
    DALRConfig,
    KDMCSEConfig,
    MACDConfig,
    MCSEConfig,
    MultitaskConfig,
    PixelLinguistConfig,
    SimCSEConfig,
    VisualCSEConfig,
)
from sbert_nonling.data.sources import DataSources
from sbert_nonling.methods.clip_teacher import build_clip_grounding
from sbert_nonling.methods.dalr import build_dalr
from sbert_nonling.methods.grounding import GroundingPlan, build_grounding
from sbert_nonling.methods.kdmcse import build_kdmcse
from sbert_nonling.methods.multitask import build_multitask, task_losses
from sbert_nonling.methods.pixel_linguist import WeightAverage, build_pixel_linguist
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, TrainingStage
from sbert_nonling.methods.simcse import build_simcse
from sbert_nonling.methods.unpaired_modality import build_unpaired_modality

#: The builder of each method, by the ``"method"`` name of its config (and of a recipe file): ``build(config, data)``.
BUILDERS: dict[str, Callable[[Any, DataSources], MethodPlan]] = {
    SimCSEConfig.method: build_simcse,
    VisualCSEConfig.method: build_unpaired_modality,
    AudioCSEConfig.method: build_unpaired_modality,
    MCSEConfig.method: build_grounding,
    MACDConfig.method: build_grounding,
    KDMCSEConfig.method: build_kdmcse,
    DALRConfig.method: build_dalr,
    MultitaskConfig.method: build_multitask,
    PixelLinguistConfig.method: build_pixel_linguist,
}

__all__ = [
    "BUILDERS",
    "GroundingPlan",
    "MethodPlan",
    "ModelUpdate",
    "TrainingStage",
    "WeightAverage",
    "build_clip_grounding",
    "build_dalr",
    "build_grounding",
    "build_kdmcse",
    "build_multitask",
    "build_pixel_linguist",
    "build_simcse",
    "build_unpaired_modality",
    "task_losses",
]
