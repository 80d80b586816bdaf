"""Typed method configs: one dataclass per method, defaults = the paper row, each loss's and stage's settings a
nested block; the bundled recipes load into them. The method registry (:func:`register_method`, :func:`get_method`)
names each method's config, builder and training data."""

from __future__ import annotations

from operator import attrgetter

from sbert_nonling.configs.audiocse import AudioCSEConfig
from sbert_nonling.configs.base import MethodConfig
from sbert_nonling.configs.clip_teacher import CLIPTeacherConfig
from sbert_nonling.configs.dalr import DALRConfig
from sbert_nonling.configs.grounding import GroundingConfig
from sbert_nonling.configs.kdmcse import KDMCSEConfig
from sbert_nonling.configs.losses import (
    AnchorConfig,
    DALRLossConfig,
    GroundingLossConfig,
    ListwiseDistillationConfig,
    ModalityLossConfig,
    SimCSELossConfig,
    SymmetricInfoNCEConfig,
    TaskHeadsConfig,
    TeacherGuidedAlignConfig,
)
from sbert_nonling.configs.macd import MACDConfig
from sbert_nonling.configs.mcse import MCSEConfig
from sbert_nonling.configs.multitask import MultitaskConfig
from sbert_nonling.configs.pixel_linguist import PixelLinguistConfig
from sbert_nonling.configs.registry import (
    ENTRY_POINT_GROUP,
    MethodSpec,
    MethodTable,
    get_method,
    list_methods,
    register_method,
)
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig, SingleRunConfig
from sbert_nonling.configs.simcse import SimCSEConfig
from sbert_nonling.configs.stage import StageConfig
from sbert_nonling.configs.unpaired_modality import UnpairedModalityConfig
from sbert_nonling.configs.visualcse import VisualCSEConfig

#: The config class of each registered method, by the ``"method"`` name a recipe JSON gives (a view of the registry).
METHOD_CONFIGS: MethodTable[type[MethodConfig]] = MethodTable(attrgetter("config"))

__all__ = [
    "ENTRY_POINT_GROUP",
    "METHOD_CONFIGS",
    "AnchorConfig",
    "AudioCSEConfig",
    "CLIPTeacherConfig",
    "DALRConfig",
    "DALRLossConfig",
    "GroundingConfig",
    "GroundingLossConfig",
    "KDMCSEConfig",
    "ListwiseDistillationConfig",
    "MACDConfig",
    "MCSEConfig",
    "MethodConfig",
    "MethodSpec",
    "MethodTable",
    "ModalityLossConfig",
    "MultitaskConfig",
    "PixelLinguistConfig",
    "SentenceEncoderConfig",
    "SimCSEConfig",
    "SimCSELossConfig",
    "SingleRunConfig",
    "StageConfig",
    "SymmetricInfoNCEConfig",
    "TaskHeadsConfig",
    "TeacherGuidedAlignConfig",
    "UnpairedModalityConfig",
    "VisualCSEConfig",
    "get_method",
    "list_methods",
    "register_method",
]
