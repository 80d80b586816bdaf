from __future__ import annotations

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
