"""Data: datasets, readers, feature extraction and the run's data sources. Names are imported on first use (PEP 562),
so the command line reads :class:`DataSources`' fields (its data options) without loading torch or ``datasets``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sbert_nonling.util.lazy_names import lazy_names

if TYPE_CHECKING:
    from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex, read_audio
    from sbert_nonling.data.captions import (
        caption_clip_dataset,
        caption_feature_dataset,
        load_caption_pairs,
        read_captions,
    )
    from sbert_nonling.data.clip_features import extract_clip_features, load_clip_features
    from sbert_nonling.data.frozen_clip import FrozenCLIP
    from sbert_nonling.data.frozen_image_encoder import FrozenImageEncoder
    from sbert_nonling.data.images import (
        image_folder_dataset,
        image_pairs_dataset,
        two_view_image_dataset,
        two_view_transform,
    )
    from sbert_nonling.data.sources import DataSources
    from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset

#: The module of this package that defines each public name.
_LAZY = {
    "audio_folder_dataset": "audio",
    "caption_clip_dataset": "captions",
    "caption_feature_dataset": "captions",
    "DataSources": "sources",
    "extract_clip_features": "clip_features",
    "FrozenCLIP": "frozen_clip",
    "FrozenImageEncoder": "frozen_image_encoder",
    "image_folder_dataset": "images",
    "image_pairs_dataset": "images",
    "label_from_regex": "audio",
    "load_caption_pairs": "captions",
    "load_clip_features": "clip_features",
    "nli_triplets_dataset": "text",
    "read_audio": "audio",
    "read_captions": "captions",
    "read_nli_triplets": "text",
    "read_sentences": "text",
    "sentence_pairs_dataset": "text",
    "two_view_image_dataset": "images",
    "two_view_transform": "images",
}

__getattr__, __dir__ = lazy_names(
    __name__, globals(), {name: f"{__name__}.{module}" for name, module in _LAZY.items()}
)

__all__ = [
    "DataSources",
    "FrozenCLIP",
    "FrozenImageEncoder",
    "audio_folder_dataset",
    "caption_clip_dataset",
    "caption_feature_dataset",
    "extract_clip_features",
    "image_folder_dataset",
    "image_pairs_dataset",
    "label_from_regex",
    "load_caption_pairs",
    "load_clip_features",
    "nli_triplets_dataset",
    "read_audio",
    "read_captions",
    "read_nli_triplets",
    "read_sentences",
    "sentence_pairs_dataset",
    "two_view_image_dataset",
    "two_view_transform",
]
