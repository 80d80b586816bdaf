"""PixelEncoder: PIXEL-format loading (4.x names, decoder ignored), equality with transformers' ViT-MAE, masking."""

from __future__ import annotations

import json
import traceback

import pytest
import torch
from safetensors.torch import save_file
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import ViTMAEConfig, ViTMAEModel

from sbert_nonling.modules import encoder_families
from sbert_nonling.modules.pixel_encoder import PixelEncoder, resize_position_table

STORED_PATCHES = 12
MAX_PATCHES = 8
HIDDEN = 32

#: transformers-5 ViT-MAE parameter name -> PIXEL's published (transformers-4.x ViT) name, written out by hand from
#: the checkpoint format (METHODS.md section 5), independent of the loader.
PIXEL_NAMES = [
    (r"^embeddings\.", "vit.embeddings."),
    (r"^layers\.(\d+)\.attention\.q_proj\.", r"vit.encoder.layer.\1.attention.attention.query."),
    (r"^layers\.(\d+)\.attention\.k_proj\.", r"vit.encoder.layer.\1.attention.attention.key."),
    (r"^layers\.(\d+)\.attention\.v_proj\.", r"vit.encoder.layer.\1.attention.attention.value."),
    (r"^layers\.(\d+)\.attention\.o_proj\.", r"vit.encoder.layer.\1.attention.output.dense."),
    (r"^layers\.(\d+)\.mlp\.fc1\.", r"vit.encoder.layer.\1.intermediate.dense."),
    (r"^layers\.(\d+)\.mlp\.fc2\.", r"vit.encoder.layer.\1.output.dense."),
    (r"^layers\.(\d+)\.layernorm_(before|after)\.", r"vit.encoder.layer.\1.layernorm_\2."),
    (r"^layernorm\.", "vit.layernorm."),
]


def _pixel_name(name: str) -> str:
    import re

    for pattern, replacement in PIXEL_NAMES:
        renamed, count = re.subn(pattern, replacement, name)
        if count:
            return renamed
    raise AssertionError(f"no PIXEL name for {name}")


@pytest.fixture(scope="module")
def reference() -> ViTMAEModel:
    torch.manual_seed(0)
    config = ViTMAEConfig(
        image_size=(16, 16 * STORED_PATCHES),
        patch_size=16,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        qkv_bias=True,
        layer_norm_eps=1e-12,
        mask_ratio=0.0,
    )
    model = ViTMAEModel(config).eval()
    with torch.no_grad():  # non-trivial biases and norms, so a mis-mapped parameter cannot go unnoticed
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model


def _write_pixel_checkpoint(directory, reference: ViTMAEModel, weights_file: str) -> None:
    """A checkpoint in PIXEL's published format: model_type "pixel", 4.x names under vit., an MAE decoder."""
    directory.mkdir()
    config = reference.config
    (directory / "config.json").write_text(
        json.dumps(
            {
                "model_type": "pixel",
                "architectures": ["PIXELForPreTraining"],
                "image_size": [16, 16 * STORED_PATCHES],
                "patch_size": 16,
                "num_channels": 3,
                "hidden_size": HIDDEN,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 64,
                "hidden_act": "gelu",
                "hidden_dropout_prob": 0.0,
                "attention_probs_dropout_prob": 0.0,
                "initializer_range": config.initializer_range,
                "layer_norm_eps": 1e-12,
                "qkv_bias": True,
                "mask_ratio": 0.25,
                "decoder_hidden_size": 16,
                "decoder_num_hidden_layers": 1,
                "decoder_num_attention_heads": 2,
                "decoder_intermediate_size": 32,
                "norm_pix_loss": True,
            }
        )
    )
    state = {_pixel_name(name): tensor.clone().contiguous() for name, tensor in reference.state_dict().items()}
    state["decoder.decoder_embed.weight"] = torch.randn(16, HIDDEN)
    state["decoder.mask_token"] = torch.randn(1, 1, 16)
    state["decoder.decoder_pred.weight"] = torch.randn(16 * 16 * 3, 16)
    if weights_file == "model.safetensors":
        save_file(state, str(directory / weights_file))
    else:
        torch.save(state, directory / weights_file)


@pytest.fixture(scope="module", params=["model.safetensors", "pytorch_model.bin"])
def pixel_checkpoint(request, tmp_path_factory, reference):
    directory = tmp_path_factory.mktemp("pixel") / "pixel-base"
    _write_pixel_checkpoint(directory, reference, request.param)
    return directory


def _strip(batch_size: int, patches: int, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(batch_size, 3, 16, 16 * patches, generator=generator)


def test_pixel_checkpoint_loads_and_equals_transformers_vit_mae(pixel_checkpoint, reference):
    encoder = PixelEncoder.from_pretrained(str(pixel_checkpoint), max_patches=MAX_PATCHES).eval()
    assert encoder.max_patches == MAX_PATCHES and encoder.get_embedding_dimension() == HIDDEN
    positions = encoder.model.embeddings.position_embeddings
    assert positions.shape == (1, 1 + MAX_PATCHES, HIDDEN)
    torch.testing.assert_close(
        positions, reference.embeddings.position_embeddings[:, : 1 + MAX_PATCHES], rtol=0, atol=0
    )

    # The same weights through transformers' ViT-MAE on a strip of MAX_PATCHES patches, no masking, patches in order.
    truncated = resize_position_table(reference, MAX_PATCHES).eval()
    pixels = _strip(3, MAX_PATCHES)
    with torch.no_grad():
        expected = truncated(pixels, noise=torch.arange(MAX_PATCHES).expand(3, -1)).last_hidden_state
        features = encoder({"pixel_values": pixels, "attention_mask": torch.ones(3, MAX_PATCHES, dtype=torch.long)})
    torch.testing.assert_close(features["token_embeddings"], expected[:, 1:], rtol=1e-5, atol=1e-5)


def test_padded_patches_are_not_attended(reference):
    encoder = PixelEncoder(resize_position_table(reference, MAX_PATCHES)).eval()
    short = PixelEncoder(resize_position_table(reference, 3)).eval()
    pixels = _strip(2, MAX_PATCHES)
    mask = torch.zeros(2, MAX_PATCHES, dtype=torch.long)
    mask[:, :3] = 1
    noisy = pixels.clone()
    noisy[:, :, :, 3 * 16 :] = torch.rand_like(noisy[:, :, :, 3 * 16 :])  # padding content must not matter
    with torch.no_grad():
        padded = encoder({"pixel_values": noisy, "attention_mask": mask})["token_embeddings"][:, :3]
        unpadded = short({"pixel_values": pixels[:, :, :, : 3 * 16], "attention_mask": mask[:, :3]})[
            "token_embeddings"
        ]
    torch.testing.assert_close(padded, unpadded, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
def test_a_gpu_s_patch_mask_is_prepared_reads_nothing_and_keeps_the_embeddings(reference, implementation, monkeypatch):
    """On the CPU ViT-MAE gets the 2-D patch mask (transformers' check reads it: free there); where the check would
    wait for the device (a GPU, faked by the device check) a prepared 4-D mask, nothing read back on the host, and
    the very embeddings of the 2-D mask."""
    model = resize_position_table(reference, MAX_PATCHES)
    model.config._attn_implementation = implementation
    encoder = PixelEncoder(model).eval()
    mask = torch.ones(2, MAX_PATCHES, dtype=torch.long)
    mask[1, 5:] = 0
    features = {"pixel_values": _strip(2, MAX_PATCHES), "attention_mask": mask}
    reads: list[str] = []

    class Reads(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten._local_scalar_dense.default:
                reads.append(traceback.extract_stack()[-2].filename)
            return func(*args, **(kwargs or {}))

    def embeddings() -> torch.Tensor:
        with torch.no_grad(), Reads():
            return encoder(dict(features))["token_embeddings"]

    on_cpu = embeddings()
    assert reads  # transformers' check of the 2-D mask
    reads.clear()
    monkeypatch.setattr(encoder_families, "mask_check_syncs", lambda device: True)
    torch.testing.assert_close(embeddings(), on_cpu, rtol=0, atol=0)
    assert reads == []


def test_no_random_masking_in_training_mode(reference):
    encoder = PixelEncoder(resize_position_table(reference, MAX_PATCHES))
    encoder.train()
    features = {"pixel_values": _strip(2, MAX_PATCHES), "attention_mask": torch.ones(2, MAX_PATCHES, dtype=torch.long)}
    first = encoder(dict(features))["token_embeddings"]
    second = encoder(dict(features))["token_embeddings"]
    assert first.shape == (2, MAX_PATCHES, HIDDEN)
    torch.testing.assert_close(first, second)  # no shuffling / dropping of patches between calls


def test_interpolated_positions_for_longer_strips(reference):
    longer = resize_position_table(reference, 2 * STORED_PATCHES)
    table = longer.embeddings.position_embeddings
    assert table.shape == (1, 1 + 2 * STORED_PATCHES, HIDDEN)
    torch.testing.assert_close(table[:, 0], reference.embeddings.position_embeddings[:, 0])
    torch.testing.assert_close(table[:, -1], reference.embeddings.position_embeddings[:, -1])


def test_save_and_load_round_trip(tmp_path, reference):
    encoder = PixelEncoder(resize_position_table(reference, MAX_PATCHES)).eval()
    encoder.save(str(tmp_path))
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "vit_mae"
    loaded = PixelEncoder.load(str(tmp_path)).eval()
    features = {"pixel_values": _strip(2, MAX_PATCHES), "attention_mask": torch.ones(2, MAX_PATCHES, dtype=torch.long)}
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(dict(features))["token_embeddings"], encoder(dict(features))["token_embeddings"], rtol=0, atol=0
        )


def test_from_config_uses_sincos_positions_and_fixed_table():
    encoder = PixelEncoder.from_config(
        max_patches=16, hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
    )
    table = encoder.model.embeddings.position_embeddings
    assert not table.requires_grad
    assert torch.all(table[0, 0] == 0) and table[0, 1:].abs().max() <= 1.0  # [CLS] row zero, sin / cos elsewhere


@pytest.mark.parametrize(
    ("features", "message"),
    [
        ({"pixel_values": torch.rand(2, 3, 16, 16 * 5), "attention_mask": torch.ones(2, 5)}, "max_patches=8"),
        ({"pixel_values": torch.rand(2, 1, 16, 16 * 8), "attention_mask": torch.ones(2, 8)}, "pixel_values of shape"),
        ({"pixel_values": torch.rand(2, 3, 16, 16 * 8), "attention_mask": torch.ones(2, 9)}, "patch attention_mask"),
    ],
)
def test_bad_shapes_are_rejected(reference, features, message):
    encoder = PixelEncoder(resize_position_table(reference, MAX_PATCHES))
    with pytest.raises(ValueError, match=message):
        encoder(features)


def test_unknown_checkpoint_types_are_rejected(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="model_type='bert'"):
        PixelEncoder.from_pretrained(str(tmp_path))
