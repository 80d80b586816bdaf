"""Method builders: each turns a method's typed config and data into the pieces of an ordinary sentence-transformers
training, a :class:`MethodPlan` of :class:`TrainingStage` s, without writing or evaluating anything; run it in one
call (:meth:`MethodPlan.train`), with your own trainer calls, or with :func:`~sbert_nonling.app.runner.run_method`.
:data:`BUILDERS` names the builder of each registered method (:func:`~sbert_nonling.configs.register_method`)."""

from __future__ import annotations

import pkgutil

from sbert_nonling.configs.registry import Builder, MethodSpec, MethodTable
from sbert_nonling.methods.clip_teacher import build_clip_grounding
from sbert_nonling.methods.dalr import build_dalr
from sbert_nonling.methods.grounding import GroundingPlan, build_grounding
from sbert_nonling.methods.kdmcse import build_kdmcse
from sbert_nonling.methods.multitask import build_multitask, task_losses
from sbert_nonling.methods.pixel_linguist import WeightAverage, build_pixel_linguist
from sbert_nonling.methods.plan import MethodPlan, ModelUpdate, PlanHooks, TrainingStage
from sbert_nonling.methods.simcse import build_simcse
from sbert_nonling.methods.unpaired_modality import build_unpaired_modality


def load_builder(spec: MethodSpec) -> Builder:
    """The builder of a registered method: the function its registration gives, or the one its import path names
    (``"package.module:function"``, imported now). A path that cannot be imported raises a ValueError naming it.

    Args:
        spec: the method's registration (:func:`~sbert_nonling.configs.get_method`).
    """
    if not isinstance(spec.builder, str):
        return spec.builder
    try:
        return pkgutil.resolve_name(spec.builder)
    except (ImportError, AttributeError) as error:
        raise ValueError(
            f"The builder {spec.builder!r} of method {spec.name!r} cannot be imported: {error}."
        ) from error


#: The builder of each registered method, by the ``"method"`` name of its config (and of a recipe file):
#: ``build(config, data)`` (a view of the registry: :func:`load_builder` of each registration).
BUILDERS: MethodTable[Builder] = MethodTable(load_builder)

__all__ = [
    "BUILDERS",
    "GroundingPlan",
    "MethodPlan",
    "ModelUpdate",
    "PlanHooks",
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
    "load_builder",
    "task_losses",
]
