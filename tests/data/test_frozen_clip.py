"""FrozenCLIP: CLIP's projected image and text embeddings, frozen, from a short name, a Hub name or a folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch
from PIL import Image
from transformers import AutoTokenizer, CLIPModel

from sbert_nonling.data.frozen_clip import CLIP_MODELS, FrozenCLIP


@pytest.fixture(scope="module")
def clip(tiny_clip_dir):
    return FrozenCLIP.from_pretrained(tiny_clip_dir)


def test_it_gives_clip_s_projected_embeddings_of_texts_and_images(clip, tiny_clip_dir, data_dir):
    texts = ["a dog runs on the beach", "two children play in the snow near a house"]
    photos = [Image.open(path).convert("RGB") for path in sorted((data_dir / "images" / "flickr8k").iterdir())[:3]]
    text_embeddings, image_embeddings = clip.encode_texts(texts), clip.encode_images(photos)
    assert text_embeddings.shape == (2, 16) and image_embeddings.shape == (3, 16) and clip.dimension == 16
    assert text_embeddings.dtype == image_embeddings.dtype == torch.float32
    model, tokenizer = CLIPModel.from_pretrained(tiny_clip_dir).eval(), AutoTokenizer.from_pretrained(tiny_clip_dir)
    with torch.no_grad():
        direct = model.get_text_features(**tokenizer(texts[:1], return_tensors="pt")).pooler_output
    torch.testing.assert_close(text_embeddings[:1], direct)  # padding to the longer text changes nothing


def test_it_stays_frozen_in_training_mode(clip):
    clip.train()
    assert not clip.training and not clip.model.training
    assert not any(parameter.requires_grad for parameter in clip.parameters())


def test_a_short_name_loads_openai_s_clip_from_the_hub_cache(tmp_path, tiny_clip_dir):
    """The tiny CLIP stands in the Hub cache as openai/clip-vit-large-patch14 (the network is the only thing not
    real): the short name loads it, offline."""
    snapshot = tmp_path / "models--openai--clip-vit-large-patch14" / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_clip_dir, snapshot)
    (tmp_path / "models--openai--clip-vit-large-patch14" / "refs").mkdir()
    (tmp_path / "models--openai--clip-vit-large-patch14" / "refs" / "main").write_text("0" * 40)
    script = (
        "from sbert_nonling.data.frozen_clip import FrozenCLIP\n"
        "print(FrozenCLIP.from_pretrained('clip-vit-large-patch14').encode_texts(['a dog']).shape)"
    )
    environment = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == "torch.Size([1, 16])" and CLIP_MODELS["clip-vit-base-patch32"].startswith(
        "openai/"
    )
