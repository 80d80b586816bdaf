"""A minimal front-end for tests: turns (N, 8) float arrays into 4 tokens for the shared encoder."""

from __future__ import annotations

import numpy as np
import torch
from sentence_transformers.base.modules import InputModule
from torch import nn

from sbert_nonling.modules.shared_encoder import ENTRY_KEYS


class ToyFrontEnd(InputModule):
    def __init__(self, hidden_size: int, modality: str = "audio", entry: str = "bypass") -> None:
        super().__init__()
        self.modality = modality
        self.entry_key = ENTRY_KEYS[entry]
        self.projection = nn.Linear(8, 4 * hidden_size)
        self.hidden_size = hidden_size

    @property
    def modalities(self):
        return [self.modality]

    def preprocess(self, inputs, prompt=None, **kwargs):
        arrays = [item["array"] if isinstance(item, dict) else item for item in inputs]
        values = torch.tensor(
            np.stack([np.asarray(array, dtype=np.float32)[..., :8].reshape(-1)[:8] for array in arrays])
        )
        return {"input_values": values}

    def forward(self, features, **kwargs):
        tokens = self.projection(features["input_values"]).view(-1, 4, self.hidden_size)
        features[self.entry_key] = tokens
        features["attention_mask"] = torch.ones(tokens.shape[:2], dtype=torch.long)
        return features

    def save(self, output_path, *args, safe_serialization=True, **kwargs):
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)
