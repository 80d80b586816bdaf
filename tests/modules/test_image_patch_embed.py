from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from sentence_transformers import SentenceTransformer

from sbert_nonling import ImagePatchEmbed, ModalityRouter, SharedEncoder
from sbert_nonling.models import build_sentence_model
from sbert_nonling.modules.shared_encoder import BYPASS_ENTRY_KEY, EMBEDDINGS_ENTRY_KEY


@pytest.fixture
def cat(data_dir):
    return Image.open(data_dir / "images" / "cifar10" / "train" / "cat" / "0000.jpg")


@pytest.mark.parametrize("mode", ["RGB", "L", "LA", "RGBA", "P", "CMYK", "I;16", "I", "F", "1"])
def test_any_image_mode_becomes_normalised_rgb_pixels(cat, mode):
    module = ImagePatchEmbed(img_size=32, patch_size=8, embed_dim=16)
    image = cat.convert("L").convert(mode) if mode in ("I;16", "I", "F") else cat.convert(mode)
    features = module.preprocess([image])
    assert features["pixel_values"].shape == (1, 3, 32, 32)
    assert torch.isfinite(features["pixel_values"]).all()


def test_sizes_arrays_and_tensors(cat):
    module = ImagePatchEmbed(img_size=32, patch_size=8, embed_dim=16)
    big = cat.resize((300, 120))
    hwc = np.asarray(cat)
    features = module.preprocess([big, Image.new("RGB", (1, 1)), hwc, np.moveaxis(hwc, -1, 0), hwc.astype(np.uint16) * 257, torch.rand(3, 40, 50)])
    assert features["pixel_values"].shape == (6, 3, 32, 32)
    np.testing.assert_allclose(features["pixel_values"][2], features["pixel_values"][3])
    np.testing.assert_allclose(features["pixel_values"][2], features["pixel_values"][4], atol=1e-5)


def test_bad_images_are_named():
    module = ImagePatchEmbed(img_size=32, patch_size=8, embed_dim=16)
    with pytest.raises(ValueError, match=r"image 1 is an array of shape \(2, 4, 5\)"):
        module.preprocess([np.zeros((4, 4, 3), np.uint8), np.zeros((2, 4, 5))])
    with pytest.raises(ValueError, match="image 0 contains NaN"):
        module.preprocess([np.full((4, 4), np.nan)])
    with pytest.raises(ValueError, match="image 0 is a tensor of shape"):
        module.preprocess([torch.zeros(4, 4, dtype=torch.uint8)])
    with pytest.raises(ValueError, match="patch_size=5 does not divide img_size=32"):
        ImagePatchEmbed(img_size=32, patch_size=5)


@pytest.mark.parametrize(("entry", "key"), [("bypass", BYPASS_ENTRY_KEY), ("embeddings", EMBEDDINGS_ENTRY_KEY)])
def test_forward_makes_cls_plus_patch_tokens(entry, key):
    module = ImagePatchEmbed(img_size=32, patch_size=8, embed_dim=16, encoder_entry=entry)
    features = module({"pixel_values": torch.randn(2, 3, 32, 32)})
    assert features[key].shape == (2, 1 + 16, 16) and features["attention_mask"].shape == (2, 17)
    larger = module({"pixel_values": torch.randn(2, 3, 48, 48)})  # positions interpolated to the 6 x 6 grid
    assert larger[key].shape == (2, 1 + 36, 16)


def test_vit_initialisation_copies_the_embeddings(tmp_path):
    from transformers import ViTConfig, ViTModel

    vit = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64))
    vit.save_pretrained(tmp_path)
    module = ImagePatchEmbed.from_vit(str(tmp_path))
    assert (module.img_size, module.patch_size, module.embed_dim) == (32, 8, 32)
    torch.testing.assert_close(module.position_embeddings, vit.embeddings.position_embeddings)
    torch.testing.assert_close(module.projection.weight, vit.embeddings.patch_embeddings.projection.weight)
    pixels = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        ours = module({"pixel_values": pixels})[BYPASS_ENTRY_KEY]
        reference = vit.embeddings(pixels)  # ViT's own patch + CLS + position embedding (dropout off in eval)
    torch.testing.assert_close(ours, reference)


def test_width_must_match_the_encoder(tiny_encoder_dir):
    with pytest.raises(ValueError, match="tokens of width 16, but the shared encoder's hidden size is 32"):
        ModalityRouter.from_encoder(SharedEncoder(tiny_encoder_dir), front_ends={"image": ImagePatchEmbed(embed_dim=16)})


def test_model_encodes_images_after_save_and_reload(tiny_encoder_dir, cat, tmp_path):
    model = build_sentence_model(tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(img_size=32, patch_size=8, embed_dim=32)})
    expected_images, expected_text = model.encode([cat, cat.rotate(90)]), model.encode(["a cat"])
    model.save(str(tmp_path))
    reloaded = SentenceTransformer(str(tmp_path), trust_remote_code=True)
    np.testing.assert_array_equal(reloaded.encode([cat, cat.rotate(90)]), expected_images)
    np.testing.assert_array_equal(reloaded.encode(["a cat"]), expected_text)


def test_truncated_and_empty_image_files_are_named(tmp_path, data_dir):
    from sbert_nonling.data.images import open_image

    raw = (data_dir / "images" / "cifar10" / "train" / "cat" / "0000.jpg").read_bytes()
    (tmp_path / "truncated.jpg").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "empty.jpg").write_bytes(b"")
    for name in ("truncated.jpg", "empty.jpg"):
        with pytest.raises(ValueError, match=f"Cannot decode image .*{name}"):
            open_image(tmp_path / name)
    assert open_image(io.BytesIO(raw)).mode == "RGB"


def test_images_already_at_size_skip_the_resize_with_the_same_pixels(cat):
    from torchvision.transforms import v2

    module = ImagePatchEmbed(img_size=32, patch_size=8, embed_dim=16)
    sized = cat.convert("RGB").resize((32, 32))
    assert module.normalise is not module.transform
    torch.testing.assert_close(module.preprocess([sized])["pixel_values"][0], module.transform(sized), rtol=0, atol=0)
    resized = module.preprocess([cat.convert("RGB").resize((48, 40))])["pixel_values"][0]
    expected = v2.functional.center_crop(v2.functional.resize(v2.functional.pil_to_tensor(cat.convert("RGB").resize((48, 40))), 32, antialias=True), 32)
    torch.testing.assert_close(resized, v2.functional.normalize(v2.functional.to_dtype(expected, torch.float32, scale=True), module.image_mean, module.image_std))
