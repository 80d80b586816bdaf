"""Every encoder family with a bypass adapter, at tiny size from transformers configs: the adapters against the
families' own forward, padding, errors, and the matrix family x entry x (image, audio) through training, saving,
reloading and the text export; the grounding losses (MCSE / MACD) on MPNet, ModernBERT and the decoders."""

from __future__ import annotations

import traceback

import numpy as np
import pytest
import torch
from PIL import Image
from sentence_transformers import SentenceTransformer
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoModel, ElectraConfig, GPT2Config

from sbert_nonling import (
    AudioPatchEmbed,
    DistillAnchorLoss,
    ImagePatchEmbed,
    MultimodalAlignLoss,
    SharedEncoder,
    SimCSELoss,
    UnpairedModalityContrastiveLoss,
    export_text_model,
)
from sbert_nonling.models import build_sentence_model
from sbert_nonling.modules import encoder_families
from sbert_nonling.modules.encoder_families import (
    BYPASS_ADAPTERS,
    PREPARED_MASK_MODEL_TYPES,
    bypass_embedding_layer,
    encoder_attention_mask,
    learned_position_embeddings,
    prepared_attention_mask,
)
from sbert_nonling.modules.shared_encoder import BYPASS_ENTRY_KEY, EMBEDDINGS_ENTRY_KEY
from tests.modules.tiny_families import FAMILIES, HIDDEN, build_tiny_family

SENTENCES = ["A man is playing a guitar.", "Two dogs run on the beach.", "A woman slices an onion."]
DECODERS = ("qwen3", "gemma3_text")


@pytest.fixture(scope="module")
def family_dir(tmp_path_factory, wiki_sentences):
    built: dict[str, str] = {}

    def build(family: str) -> str:
        if family not in built:
            built[family] = build_tiny_family(family, tmp_path_factory.mktemp(family), wiki_sentences[:300])
        return built[family]

    return build


def embedding_layer(model, tokens, mask):
    """The family's own embedding layer applied to already-looked-up tokens (what the bypass skips)."""
    kind = model.config.model_type
    if kind in DECODERS:
        return tokens
    if kind == "deberta-v2":
        return model.embeddings(inputs_embeds=tokens, mask=mask)
    if kind == "distilbert":
        return model.embeddings(None, inputs_embeds=tokens)
    return model.embeddings(inputs_embeds=tokens)


def test_every_family_of_the_registry_is_tested():
    assert set(FAMILIES) == set(BYPASS_ADAPTERS)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_embedding_layer_then_bypass_is_the_family_forward(family_dir, family):
    """The adapter continues exactly where the family's embedding layer stops: both together are its forward pass,
    padded positions included (their rows are masked out of every real token's attention)."""
    encoder = SharedEncoder(family_dir(family)).eval()
    model = encoder.auto_model
    torch.manual_seed(0)
    tokens = torch.randn(2, 6, HIDDEN)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    with torch.no_grad():
        reference = model(inputs_embeds=tokens, attention_mask=mask).last_hidden_state
        bypassed = encoder({BYPASS_ENTRY_KEY: embedding_layer(model, tokens, mask), "attention_mask": mask})[
            "token_embeddings"
        ]
        entered = encoder({EMBEDDINGS_ENTRY_KEY: tokens, "attention_mask": mask})["token_embeddings"]
        raw = encoder({BYPASS_ENTRY_KEY: tokens, "attention_mask": mask})["token_embeddings"]
    torch.testing.assert_close(bypassed[mask.bool()], reference[mask.bool()], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entered, reference)
    if family in DECODERS:  # the embedding layer is the token lookup alone: both entries coincide
        torch.testing.assert_close(raw, entered)
    else:
        assert not torch.allclose(raw, entered, atol=1e-3)


@pytest.mark.parametrize("entry_key", [BYPASS_ENTRY_KEY, EMBEDDINGS_ENTRY_KEY])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_padded_front_end_batch_gives_the_unpadded_embeddings(family_dir, family, entry_key):
    encoder = SharedEncoder(family_dir(family)).eval()
    torch.manual_seed(1)
    short = torch.randn(1, 5, HIDDEN)
    padded = torch.cat([short, 50 * torch.randn(1, 3, HIDDEN)], dim=1)  # large garbage in the padded positions
    with torch.no_grad():
        alone = encoder({entry_key: short, "attention_mask": torch.ones(1, 5, dtype=torch.long)})["token_embeddings"]
        masked = encoder({entry_key: padded, "attention_mask": torch.tensor([[1] * 5 + [0] * 3])})["token_embeddings"]
    torch.testing.assert_close(masked[:, :5], alone, atol=1e-5, rtol=1e-5)


def test_a_family_without_adapter_gets_a_value_error_naming_the_supported_ones(tmp_path):
    model = AutoModel.from_config(GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=50))
    with pytest.raises(
        ValueError, match=r"GPT2Model \(model_type 'gpt2'\).*'deberta-v2'.*'qwen3'.*encoder_entry='embeddings'"
    ):
        bypass_embedding_layer(model, torch.randn(1, 3, 32), torch.ones(1, 3, dtype=torch.long))


def test_factorised_embeddings_reject_hidden_size_tokens_and_point_to_the_bypass(tmp_path, wiki_sentences):
    config = ElectraConfig(
        vocab_size=300,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    AutoModel.from_config(config).save_pretrained(tmp_path)
    build_tiny_family("bert", tmp_path / "tokenizer", wiki_sentences[:300])  # only its tokenizer files are used
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        if (tmp_path / "tokenizer" / name).exists():
            (tmp_path / name).write_bytes((tmp_path / "tokenizer" / name).read_bytes())
    encoder = SharedEncoder(str(tmp_path))
    tokens, mask = torch.randn(1, 3, 32), torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"\(batch, tokens, 16\).*width 16.*encoder_entry='bypass'"):
        encoder({EMBEDDINGS_ENTRY_KEY: tokens, "attention_mask": mask})
    assert encoder({BYPASS_ENTRY_KEY: tokens, "attention_mask": mask})["token_embeddings"].shape == (1, 3, 32)


def test_position_tables_exist_only_where_positions_are_learned(family_dir):
    tables = {family: learned_position_embeddings(SharedEncoder(family_dir(family)).auto_model) for family in FAMILIES}
    assert {family for family, table in tables.items() if table is None} == {"deberta-v2", "modernbert", *DECODERS}


def front_end_and_batch(modality: str, entry: str):
    """A tiny front-end of ``modality`` and two views of a 4-input batch with 2 classes."""
    if modality == "image":
        front_end = ImagePatchEmbed(image_size=16, patch_size=8, embedding_dimension=HIDDEN, encoder_entry=entry)
        colours = [(200, 30, 30), (30, 30, 200), (220, 60, 40), (40, 50, 230)]
        views = [
            [Image.new("RGB", (16, 16), tuple(min(255, value + shift) for value in colour)) for colour in colours]
            for shift in (0, 20)
        ]
        return front_end, views
    front_end = AudioPatchEmbed(target_frames=48, embedding_dimension=HIDDEN, encoder_entry=entry)
    rng = np.random.default_rng(0)
    clips = [np.sin(np.arange(8000) * frequency).astype(np.float32) for frequency in (0.05, 0.3, 0.06, 0.32)]
    views = [
        [
            {"array": clip + 0.01 * rng.standard_normal(8000).astype(np.float32), "sampling_rate": 16000}
            for clip in clips
        ]
        for _ in range(2)
    ]
    return front_end, views


def layer_gradient(encoder: SharedEncoder) -> float:
    return sum(
        parameter.grad.abs().sum().item()
        for name, parameter in encoder.auto_model.named_parameters()
        if "layer" in name and parameter.grad is not None
    )


@pytest.mark.slow
@pytest.mark.parametrize("modality", ["image", "audio"])
@pytest.mark.parametrize("entry", ["bypass", "embeddings"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_matrix_trains_saves_reloads_and_exports(family_dir, tmp_path, family, entry, modality):
    """VisualCSE / AudioCSE's modality loss through the family's encoder: two optimizer steps whose gradient reaches
    the encoder layers; the saved model reloads to identical embeddings; the text export is the same text model."""
    torch.manual_seed(0)
    front_end, (view_1, view_2) = front_end_and_batch(modality, entry)
    model = build_sentence_model(
        family_dir(family), pooling=FAMILIES[family][2], max_seq_length=16, front_ends={modality: front_end}
    )
    loss = UnpairedModalityContrastiveLoss(model, mode="supcon", temperature=0.1)
    optimizer = torch.optim.AdamW(loss.parameters(), lr=1e-3)
    encoder = model[0].encoder
    before = {name: parameter.detach().clone() for name, parameter in encoder.named_parameters()}
    model.train()
    for _ in range(2):
        optimizer.zero_grad()
        value = loss([model.preprocess(view_1), model.preprocess(view_2)], torch.tensor([0, 1, 0, 1]))
        value.backward()
        assert torch.isfinite(value) and layer_gradient(encoder) > 0
        optimizer.step()
    assert any(
        not torch.equal(before[name], parameter) for name, parameter in encoder.named_parameters() if "layer" in name
    )

    model.save(str(tmp_path / "full"))
    reloaded = SentenceTransformer(str(tmp_path / "full"), trust_remote_code=True)
    for inputs in (SENTENCES, view_1):
        np.testing.assert_allclose(reloaded.encode(inputs), model.encode(inputs), rtol=0, atol=1e-6)
    export_text_model(model, tmp_path / "export")
    plain = SentenceTransformer(str(tmp_path / "export"))
    np.testing.assert_allclose(plain.encode(SENTENCES), model.encode(SENTENCES), rtol=0, atol=1e-6)


@pytest.mark.parametrize("method", ["mcse", "macd"])
@pytest.mark.parametrize("family", ["mpnet", "modernbert", *DECODERS])
def test_grounding_losses_train_every_family(family_dir, family, method):
    """MCSE (SimCSE + grounding) and MACD (grounding anchored to a frozen copy) need only the text path and the
    pooled output: two optimizer steps, finite terms, the encoder layers move."""
    torch.manual_seed(0)
    model = build_sentence_model(family_dir(family), pooling=FAMILIES[family][2], max_seq_length=16)
    grounding = MultimodalAlignLoss(
        model, image_dimension=8, text_loss=SimCSELoss(model) if method == "mcse" else None, projection_dimension=16
    )
    loss = grounding if method == "mcse" else DistillAnchorLoss(model, base_loss=grounding)
    optimizer = torch.optim.AdamW(loss.parameters(), lr=1e-3)
    encoder = model[0].encoder
    before = {name: parameter.detach().clone() for name, parameter in encoder.named_parameters()}
    features = [model.preprocess(SENTENCES), model.preprocess(SENTENCES)]
    model.train()
    for _ in range(2):
        optimizer.zero_grad()
        terms = loss(features, torch.randn(3, 8))
        total = sum(terms.values())
        total.backward()
        assert all(torch.isfinite(term) for term in terms.values()) and layer_gradient(encoder) > 0
        optimizer.step()
    assert any(
        not torch.equal(before[name], parameter) for name, parameter in encoder.named_parameters() if "layer" in name
    )


#: The families a prepared mask is built for, among the tested ones (Pixel Linguist's vit_mae: tests/modules).
PREPARED_FAMILIES = [family for family in FAMILIES if family in PREPARED_MASK_MODEL_TYPES]


def sync_sites(run) -> list[str]:
    """The Python files of every host read-back (``aten._local_scalar_dense``: ``.item()``, ``bool(tensor)``, ...)
    while ``run()`` runs: on a GPU, each is a wait for the device."""
    sites: list[str] = []

    class Reads(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten._local_scalar_dense.default:
                frames = [frame for frame in traceback.extract_stack()[:-1] if "/torch/" not in frame.filename]
                sites.append(frames[-1].filename)
            return func(*args, **(kwargs or {}))

    with Reads():
        run()
    return sites


def test_families_that_build_their_mask_with_transformers_are_those_prepared():
    assert set(PREPARED_FAMILIES) == set(FAMILIES) - {"deberta-v2", *DECODERS}
    assert "vit_mae" in PREPARED_MASK_MODEL_TYPES  # Pixel Linguist's encoder


@pytest.mark.parametrize(
    ("family", "implementation"),
    # MPNet has eager attention only
    [
        (family, implementation)
        for family in PREPARED_FAMILIES
        for implementation in ("sdpa", "eager")
        if (family, implementation) != ("mpnet", "sdpa")
    ],
)
def test_a_prepared_mask_gives_the_attention_of_the_2d_mask(family_dir, family, implementation):
    """With padding, the prepared mask is the mask the 2-D one makes (the same numbers, bit for bit); without
    padding an all-true mask, where the 2-D one makes none: the same attention within rounding."""
    model = AutoModel.from_pretrained(family_dir(family), attn_implementation=implementation).eval()
    torch.manual_seed(0)
    tokens = torch.randn(2, 6, HIDDEN)
    for mask, tolerance in (
        (torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]), 0.0),
        (torch.ones(2, 6, dtype=torch.long), 1e-6),  # bit-equal on an AVX2 EPYC; kernels may differ
    ):
        prepared = prepared_attention_mask(model.config, mask, tokens.dtype)
        with torch.no_grad():
            reference = model(inputs_embeds=tokens, attention_mask=mask).last_hidden_state
            given = model(inputs_embeds=tokens, attention_mask=prepared).last_hidden_state
        torch.testing.assert_close(given, reference, atol=tolerance, rtol=tolerance)


@pytest.mark.parametrize("family", PREPARED_FAMILIES)
def test_a_mask_of_a_device_that_the_check_would_wait_for_is_prepared_and_reads_nothing(
    family_dir, family, monkeypatch
):
    """On the CPU the 2-D mask is handed on (the committed CPU numbers unchanged); where transformers' check would
    wait for the device (a GPU, faked by the device check), the text path and the bypass get a prepared mask and no
    value is read back on the host, transformers' check included; the embeddings stay those of the 2-D mask."""
    encoder = SharedEncoder(family_dir(family)).eval()
    text = encoder.preprocess(SENTENCES)
    torch.manual_seed(0)
    tokens = torch.randn(2, 6, HIDDEN)
    front_end = {"attention_mask": torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])}

    def forward() -> list[torch.Tensor]:
        with torch.no_grad():
            return [
                encoder(dict(text))["token_embeddings"],
                encoder({BYPASS_ENTRY_KEY: tokens, **front_end})["token_embeddings"],
            ]

    assert (
        encoder_attention_mask(encoder.auto_model, front_end["attention_mask"], torch.float32)
        is (front_end["attention_mask"])
    )
    on_cpu = forward()
    assert sync_sites(forward)  # transformers' check reads the 2-D mask: free on the CPU, a wait on a GPU
    monkeypatch.setattr(encoder_families, "mask_check_syncs", lambda device: True)
    prepared = encoder_attention_mask(encoder.auto_model, front_end["attention_mask"], torch.float32)
    assert isinstance(prepared, dict) if family == "modernbert" else prepared.ndim == 4
    assert sync_sites(forward) == []
    for given, reference in zip(forward(), on_cpu):
        torch.testing.assert_close(given, reference, atol=0, rtol=0)


def test_decoders_and_deberta_keep_the_2d_mask(family_dir, monkeypatch):
    monkeypatch.setattr(encoder_families, "mask_check_syncs", lambda device: True)
    mask = torch.ones(2, 4, dtype=torch.long)
    for family in ("deberta-v2", *DECODERS):
        assert encoder_attention_mask(SharedEncoder(family_dir(family)).auto_model, mask, torch.float32) is mask
