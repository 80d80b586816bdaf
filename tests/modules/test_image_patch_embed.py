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
    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=16)
    image = cat.convert("L").convert(mode) if mode in ("I;16", "I", "F") else cat.convert(mode)
    features = module.preprocess([image])
    assert features["pixel_values"].shape == (1, 3, 32, 32)
    assert torch.isfinite(features["pixel_values"]).all()


def test_sizes_arrays_and_tensors(cat):
    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=16)
    big = cat.resize((300, 120))
    hwc = np.asarray(cat)
    features = module.preprocess(
        [
            big,
            Image.new("RGB", (1, 1)),
            hwc,
            np.moveaxis(hwc, -1, 0),
            hwc.astype(np.uint16) * 257,
            torch.rand(3, 40, 50),
        ]
    )
    assert features["pixel_values"].shape == (6, 3, 32, 32)
    np.testing.assert_allclose(features["pixel_values"][2], features["pixel_values"][3])
    np.testing.assert_allclose(features["pixel_values"][2], features["pixel_values"][4], atol=1e-5)


def test_bad_images_are_named():
    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=16)
    with pytest.raises(ValueError, match=r"image 1 is an array of shape \(2, 4, 5\)"):
        module.preprocess([np.zeros((4, 4, 3), np.uint8), np.zeros((2, 4, 5))])
    with pytest.raises(ValueError, match="image 0 contains NaN"):
        module.preprocess([np.full((4, 4), np.nan)])
    with pytest.raises(ValueError, match="image 0 is a tensor of shape"):
        module.preprocess([torch.zeros(4, 4, dtype=torch.uint8)])
    with pytest.raises(ValueError, match="patch_size=5 does not divide image_size=32"):
        ImagePatchEmbed(image_size=32, patch_size=5)


@pytest.mark.parametrize(("entry", "key"), [("bypass", BYPASS_ENTRY_KEY), ("embeddings", EMBEDDINGS_ENTRY_KEY)])
def test_forward_makes_cls_plus_patch_tokens(entry, key):
    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=16, encoder_entry=entry)
    features = module({"pixel_values": torch.randn(2, 3, 32, 32)})
    assert features[key].shape == (2, 1 + 16, 16) and features["attention_mask"].shape == (2, 17)
    larger = module({"pixel_values": torch.randn(2, 3, 48, 48)})  # positions interpolated to the 6 x 6 grid
    assert larger[key].shape == (2, 1 + 36, 16)


def test_vit_initialisation_copies_the_embeddings(tiny_vit_dir):
    from transformers import ViTModel

    vit = ViTModel.from_pretrained(tiny_vit_dir)
    module = ImagePatchEmbed.from_vit(str(tiny_vit_dir))
    assert (module.image_size, module.patch_size, module.embedding_dimension) == (32, 8, 32)
    for name, value in vit.embeddings.state_dict().items():
        torch.testing.assert_close(module.embeddings.state_dict()[name], value)
    pixels = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        ours = module({"pixel_values": pixels})[BYPASS_ENTRY_KEY]
        reference = vit.embeddings(pixels)  # ViT's own patch + CLS + position embedding (dropout off in eval)
    torch.testing.assert_close(ours, reference)


def test_width_must_match_the_encoder(tiny_encoder_dir):
    with pytest.raises(ValueError, match="tokens of width 16, but the shared encoder's hidden size is 32"):
        ModalityRouter.from_encoder(
            SharedEncoder(tiny_encoder_dir), front_ends={"image": ImagePatchEmbed(embedding_dimension=16)}
        )


def test_model_encodes_images_after_save_and_reload(tiny_encoder_dir, cat, tmp_path):
    model = build_sentence_model(
        tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=32)}
    )
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


def test_encode_of_a_lazily_opened_truncated_image_names_its_position(tiny_encoder_dir, tmp_path, data_dir):
    """Issue 26: ``encode`` of a truncated JPEG opened with Image.open raised a bare PIL OSError."""
    raw = (data_dir / "images" / "cifar10" / "train" / "cat" / "0000.jpg").read_bytes()
    # Cut in the scan data: half of a 32x32 CIFAR JPEG is header still, which Image.open itself refuses.
    (tmp_path / "cut.jpg").write_bytes(raw[: 3 * len(raw) // 4])
    model = build_sentence_model(
        tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=32)}
    )
    good = [Image.open(data_dir / "images" / "cifar10" / "train" / "cat" / f"000{index}.jpg") for index in (1, 2)]
    with pytest.raises(ValueError, match=r"^image 2: Cannot decode image '.*cut\.jpg': image file is truncated"):
        model.encode([*good, Image.open(tmp_path / "cut.jpg")])
    closed = Image.open(data_dir / "images" / "cifar10" / "train" / "cat" / "0003.jpg")
    closed.fp.close()  # a PIL image whose data can no longer be read
    with pytest.raises(ValueError, match=r"^image 0: Cannot decode image '.*0003\.jpg'"):
        model.encode([closed])
    assert model.encode(good).shape == (2, 32)


def test_images_already_at_size_skip_the_resize_with_the_same_pixels(cat):
    from torchvision.transforms import v2

    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=16)
    sized = cat.convert("RGB").resize((32, 32))
    assert module.normalise is not module.transform
    torch.testing.assert_close(module.preprocess([sized])["pixel_values"][0], module.transform(sized), rtol=0, atol=0)
    resized = module.preprocess([cat.convert("RGB").resize((48, 40))])["pixel_values"][0]
    expected = v2.functional.center_crop(
        v2.functional.resize(v2.functional.pil_to_tensor(cat.convert("RGB").resize((48, 40))), 32, antialias=True), 32
    )
    torch.testing.assert_close(
        resized,
        v2.functional.normalize(
            v2.functional.to_dtype(expected, torch.float32, scale=True), module.image_mean, module.image_std
        ),
    )


def test_patch_dropout_keeps_cls_and_positioned_patches_in_training_only():
    torch.manual_seed(0)
    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=16, token_keep_ratio=0.5)
    pixels = torch.randn(3, 3, 32, 32)
    module.eval()
    full = module({"pixel_values": pixels})[BYPASS_ENTRY_KEY]  # (3, 17, 16): inference keeps every token
    module.train()
    torch.manual_seed(3)
    features = module({"pixel_values": pixels})
    torch.manual_seed(3)  # the draw patch dropout made: its kept patches, in grid order after [CLS]
    kept_positions = torch.rand(3, 16).topk(8, dim=1).indices.sort(dim=1).values + 1
    assert full.shape == (3, 17, 16) and features["attention_mask"].shape == (3, 9)
    for row in range(3):  # the full forward's tokens at those places, their positions included
        torch.testing.assert_close(features[BYPASS_ENTRY_KEY][row], full[row, [0, *kept_positions[row].tolist()]])


@pytest.mark.parametrize("entry", ["bypass", "embeddings"])
def test_patch_dropout_trains_through_the_encoder_and_leaves_encode_unchanged(tiny_encoder_dir, cat, entry):
    torch.manual_seed(0)
    model = build_sentence_model(
        tiny_encoder_dir,
        pooling="cls",
        front_ends={"image": ImagePatchEmbed(32, 8, embedding_dimension=32, encoder_entry=entry)},
    )
    expected = model.encode([cat, cat.rotate(90)])
    front_end = model[0].sub_modules["image"][0]
    front_end.token_keep_ratio = 0.25
    np.testing.assert_array_equal(model.encode([cat, cat.rotate(90)]), expected)  # eval: all 17 tokens
    model.train()
    features = model.preprocess([cat, cat.rotate(90)], modality="image")
    torch.manual_seed(7)
    output = model(features)
    assert output["token_embeddings"].shape == (2, 1 + 4, 32) and output["sentence_embedding"].shape == (2, 32)
    output["sentence_embedding"].square().sum().backward()
    torch.manual_seed(7)  # the front-end's draw comes first: the kept patches of both rows
    kept = set((torch.rand(2, 16).topk(4, dim=1).indices + 1).flatten().tolist())
    reached = front_end.embeddings.position_embeddings.grad[0].abs().sum(dim=-1).nonzero().flatten().tolist()
    assert reached == [0, *sorted(kept)]  # [CLS] and the kept patches' grid positions, nothing else


def test_token_keep_ratio_is_saved_and_old_configs_load_without_it(tiny_encoder_dir, tmp_path):
    import json

    module = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=32, token_keep_ratio=0.5)
    model = build_sentence_model(tiny_encoder_dir, front_ends={"image": module})
    model.save(str(tmp_path))
    configs = list(tmp_path.rglob(ImagePatchEmbed.config_file_name))
    assert len(configs) == 1 and json.loads(configs[0].read_text())["token_keep_ratio"] == 0.5
    assert (
        SentenceTransformer(str(tmp_path), trust_remote_code=True)[0].sub_modules["image"][0].token_keep_ratio == 0.5
    )
    config = json.loads(configs[0].read_text())
    del config["token_keep_ratio"]  # a model saved before the option existed
    configs[0].write_text(json.dumps(config))
    assert (
        SentenceTransformer(str(tmp_path), trust_remote_code=True)[0].sub_modules["image"][0].token_keep_ratio == 1.0
    )
    with pytest.raises(ValueError, match="token_keep_ratio=0 must be in"):
        ImagePatchEmbed(token_keep_ratio=0)


@pytest.mark.parametrize("image_size", [16, 24])
def test_vit_at_a_lower_resolution_interpolates_the_position_table(tiny_vit_dir, image_size):
    from transformers import ViTModel

    vit = ViTModel.from_pretrained(tiny_vit_dir)  # in eval mode
    module = ImagePatchEmbed.from_vit(str(tiny_vit_dir), image_size=image_size, token_keep_ratio=0.5)
    grid = image_size // 8
    assert (module.image_size, module.token_keep_ratio) == (image_size, 0.5)
    assert module.embeddings.position_embeddings.shape == (1, 1 + grid * grid, 32)
    assert module.preprocess([Image.new("RGB", (50, 40))])["pixel_values"].shape == (1, 3, image_size, image_size)
    pixels = torch.randn(2, 3, image_size, image_size)
    module.eval()
    with torch.no_grad():
        ours = module({"pixel_values": pixels})[BYPASS_ENTRY_KEY]
        reference = vit.embeddings(pixels, interpolate_pos_encoding=True)  # ViT's own bicubic interpolation
    torch.testing.assert_close(ours, reference)
    with pytest.raises(ValueError, match="patch_size=8 does not divide image_size=20"):
        ImagePatchEmbed.from_vit(str(tiny_vit_dir), image_size=20)


def test_a_front_end_without_a_width_takes_the_encoders(tiny_encoder_dir, cat, tmp_path):
    """Issue 26: front-ends defaulted to 768 and had to be told the encoder's width (384 for MiniLM)."""
    front_end = ImagePatchEmbed(image_size=32, patch_size=8)
    with pytest.raises(
        ValueError, match="built without embedding_dimension and has not been placed before a shared encoder"
    ):
        front_end.preprocess([cat])
    model = build_sentence_model(tiny_encoder_dir, front_ends={"image": front_end})
    assert front_end.get_embedding_dimension() == 32 and front_end.embeddings.position_embeddings.shape == (1, 17, 32)
    expected = model.encode([cat])
    assert expected.shape == (1, 32)
    model.save(str(tmp_path))
    reloaded = SentenceTransformer(str(tmp_path), trust_remote_code=True)
    assert reloaded[0].sub_modules["image"][0].embedding_dimension == 32
    np.testing.assert_array_equal(reloaded.encode([cat]), expected)
