"""AudioPatchEmbed: kaldi fbank patches from waveforms, for the "audio" route of a ModalityRouter."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import torch
from sentence_transformers.base.modality_types import Modality
from torch import nn
from transformers import ASTFeatureExtractor

from sbert_nonling.data.decoding import SAMPLE_RATE, waveform_to_mono_16k
from sbert_nonling.modules.band_masking import BandMasking
from sbert_nonling.modules.front_end import FrontEnd
from sbert_nonling.modules.patch_tokens import PatchTokens
from sbert_nonling.util.choices import AudioLayout, EncoderEntry

logger = logging.getLogger(__name__)

#: SSAST's fbank normalisation: (fbank - mean) / (2 * std) with AudioSet statistics.
SSAST_MEAN, SSAST_STD = -4.2677393, 4.5689974
LAYOUTS: dict[str, dict[str, Any]] = {
    # VisualCSE/AudioCSE released code: Conv2d(1, h, 24, stride 24) on 128 x 1024 -> 5 x 42 = 210 patches (+ CLS).
    "released": {"patch_size": 24, "normalize": False, "position_embeddings": False},
    # SSAST: 16 x 16 patches -> 8 x 64 = 512 patches, normalised fbank, learned positions.
    "ssast": {"patch_size": 16, "normalize": True, "position_embeddings": True},
}


class AudioPatchEmbed(FrontEnd):
    """Turns waveforms into fbank patch tokens for the shared encoder (AudioCSE's audio front-end).

    Contract: ``preprocess`` reads waveforms (arrays / tensors at 16 kHz, or ``{"array", "sampling_rate"}`` dicts; not
    file paths, which :func:`~sbert_nonling.data.audio.read_audio` reads), downmixed, resampled and mean-removed, and
    writes ``ASTFeatureExtractor``'s kaldi fbank (the paper's settings) padded / cut to ``target_frames`` as
    ``input_features`` (B, num_mel_bins, target_frames). ``forward`` applies
    SpecAugment (training), the layout's normalisation and :class:`~sbert_nonling.modules.patch_tokens.PatchTokens`,
    and hands the tokens on. Layouts (:data:`LAYOUTS`): ``"released"``, the VisualCSE / AudioCSE released code's
    24 x 24 patches with stride 24 (128 x 1024 fbank -> 5 x 42 = 210 patches + [CLS]), no positions, no
    normalisation; ``"ssast"``, 16 x 16 patches (8 x 64 = 512), the fbank normalised as (x + 4.2677393) / (2 x
    4.5689974), learned positions (Jian et al., 2022, "Non-Linguistic Supervision for Contrastive Learning of Sentence
    Embeddings"; Gong et al., 2022, SSAST).

    Args:
        num_mel_bins: fbank bins (128).
        target_frames: frames after padding / cutting (1024 = 10.24 s).
        layout: ``"released"`` or ``"ssast"``.
        freq_mask, time_mask: SpecAugment in training: mask up to ``freq_mask`` mel bins and ``time_mask`` frames
            (0 disables; paper 48 / 192).
        embedding_dimension, encoder_entry, token_keep_ratio: as :class:`~sbert_nonling.modules.front_end.FrontEnd`
            (positions are added before patch dropout, so a kept patch keeps its place in the grid).

    Example:
        ::

            import numpy as np
            from sbert_nonling import AudioPatchEmbed, SharedEncoder
            from sbert_nonling.models import build_sentence_model, build_tiny_encoder

            # offline: a tiny random encoder; e.g. "bert-base-uncased"
            path = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)
            encoder = SharedEncoder(str(path))
            # the audio front-end takes the encoder's width (768 for BERT-base)
            model = build_sentence_model(encoder, front_ends={"audio": AudioPatchEmbed()})
            model.encode([{"array": np.random.randn(16000), "sampling_rate": 16000}])
    """

    config_keys: list[str] = [
        "num_mel_bins",
        "target_frames",
        "layout",
        "freq_mask",
        "time_mask",
        *FrontEnd.config_keys,
    ]
    config_file_name = "audio_patch_embed_config.json"

    def __init__(
        self,
        num_mel_bins: int = 128,
        target_frames: int = 1024,
        embedding_dimension: int | None = None,
        layout: AudioLayout = "released",
        encoder_entry: EncoderEntry = "bypass",
        freq_mask: int = 0,
        time_mask: int = 0,
        token_keep_ratio: float = 1.0,
    ) -> None:
        super().__init__(embedding_dimension, encoder_entry, token_keep_ratio)
        if layout not in LAYOUTS:
            raise ValueError(f"layout={layout!r} must be one of {list(LAYOUTS)}.")
        patch = LAYOUTS[layout]["patch_size"]
        self.num_mel_bins = self.check_int("num_mel_bins", num_mel_bins, patch, 1024)
        self.target_frames = self.check_int("target_frames", target_frames, patch, 16384)
        self.layout = layout
        self.freq_mask = self.check_int("freq_mask", freq_mask, 0, num_mel_bins)
        self.time_mask = self.check_int("time_mask", time_mask, 0, target_frames)
        self.feature_extractor = ASTFeatureExtractor(
            num_mel_bins=num_mel_bins, max_length=target_frames, do_normalize=False
        )
        if self.embedding_dimension is not None:
            self.build_token_layers()
        self.spec_augment = nn.Sequential(BandMasking(freq_mask, "frequency"), BandMasking(time_mask, "time"))

    def build_token_layers(self) -> None:
        assert (
            self.embedding_dimension is not None
        )  # called once the width is known (constructor or take_encoder_width)
        layout = LAYOUTS[self.layout]
        self.embeddings = PatchTokens(
            (self.num_mel_bins, self.target_frames),
            layout["patch_size"],
            1,
            self.embedding_dimension,
            layout["position_embeddings"],
        )

    @property
    def modalities(self) -> list[Modality]:
        return ["audio"]

    def preprocess(self, inputs: Sequence[Any], prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        self.check_width_known()
        for index, audio in enumerate(inputs):
            if isinstance(audio, (str, os.PathLike)):  # as the image route, which takes images and not their paths
                raise ValueError(
                    f"audio {index} is a path ({str(audio)!r}); the audio route takes waveforms, not files. Read it "
                    "first: sbert_nonling.data.audio.read_audio(path) gives its {'array', 'sampling_rate'} dict."
                )
        waveforms = [waveform_to_mono_16k(audio, f"audio {index}") for index, audio in enumerate(inputs)]
        centred = [(waveform - waveform.mean()).numpy() for waveform in waveforms]  # the released code's mean removal
        fbank = self.feature_extractor(centred, sampling_rate=SAMPLE_RATE, return_tensors="pt")[
            "input_values"
        ]  # (B, frames, mel)
        return {"input_features": fbank.transpose(1, 2).contiguous()}

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        fbank = features["input_features"].to(self.embeddings.cls_token.dtype)  # (B, mel, frames)
        if self.training:
            fbank = self.spec_augment(fbank)
        if LAYOUTS[self.layout]["normalize"]:
            fbank = (fbank - SSAST_MEAN) / (2 * SSAST_STD)
        return self.hand_off(features, self.embeddings(fbank.unsqueeze(1)))
