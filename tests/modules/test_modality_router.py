from __future__ import annotations

import collections
import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Router
from sentence_transformers.sentence_transformer.modules import Pooling

from sbert_nonling import ModalityRouter, SharedEncoder, export_text_model
from sbert_nonling.models import build_sentence_model
from sbert_nonling.util.frozen import FrozenModule
from tests.modules.toy_front_end import ToyFrontEnd

AUDIO_BATCH = [
    {"array": np.linspace(0, 1, 16), "sampling_rate": 16000},
    {"array": np.linspace(1, 0, 16), "sampling_rate": 16000},
]


@pytest.fixture
def encoder(tiny_encoder_dir):
    return SharedEncoder(tiny_encoder_dir, max_seq_length=32)


def multimodal_model(encoder, entry="bypass"):
    router = ModalityRouter.from_encoder(encoder, front_ends={"audio": ToyFrontEnd(32, "audio", entry)})
    return SentenceTransformer(modules=[router, Pooling(32, pooling_mode="cls")])


def test_every_route_ends_in_the_same_encoder(encoder):
    router = ModalityRouter.from_encoder(encoder, front_ends={"audio": ToyFrontEnd(32)})
    router.add_route("image", ToyFrontEnd(32, "image"))
    assert list(router.sub_modules) == ["text", "audio", "image"]
    assert all(route[-1] is encoder for route in router.sub_modules.values())
    assert router.encoder is encoder
    assert router.default_route == "text"


def test_routes_must_be_modalities_and_share_the_encoder(encoder, tiny_encoder_dir):
    with pytest.raises(ValueError, match="'query' is not a modality"):
        ModalityRouter({"query": [encoder]})
    other = SharedEncoder(tiny_encoder_dir)
    with pytest.raises(ValueError, match="must end in the same encoder object"):
        ModalityRouter({"text": [encoder], "audio": [ToyFrontEnd(32), other]})
    router = ModalityRouter.from_encoder(encoder)
    with pytest.raises(ValueError, match="Route 'text' already exists"):
        router.add_route("text", ToyFrontEnd(32))


@pytest.mark.parametrize("entry", ["bypass", "embeddings"])
def test_text_and_audio_gradients_reach_the_one_encoder(encoder, entry):
    model = multimodal_model(encoder, entry)
    model.train()
    text_features = model.preprocess(["a man plays a guitar", "a dog runs"])
    audio_features = model.preprocess(AUDIO_BATCH)
    assert audio_features["modality"] == "audio"
    torch.manual_seed(0)
    probe = torch.randn(32)  # a plain sum of LayerNorm outputs has no gradient
    (model(text_features)["sentence_embedding"] @ probe).sum().backward()
    text_grad = encoder.auto_model.encoder.layer[0].attention.self.query.weight.grad.clone()
    model.zero_grad()
    (model(audio_features)["sentence_embedding"] @ probe).sum().backward()
    audio_grad = encoder.auto_model.encoder.layer[0].attention.self.query.weight.grad
    assert text_grad.abs().sum() > 0 and audio_grad.abs().sum() > 0
    word_grad = encoder.auto_model.embeddings.word_embeddings.weight.grad
    assert word_grad is None or word_grad.abs().sum() == 0  # audio never touches the word embeddings


def test_audio_dicts_are_routed_as_audio_unlike_the_builtin_router(encoder):
    model = multimodal_model(encoder)
    embeddings = model.encode(AUDIO_BATCH)
    assert embeddings.shape == (2, 32)
    builtin = Router({"text": [encoder], "audio": [ToyFrontEnd(32), encoder]})
    with pytest.raises(ValueError, match="different task types"):
        builtin.preprocess(AUDIO_BATCH)


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (["fine", None], r"input 1 is None"),  # None counts as length 1: sorted after "fine"
        (["a much longer sentence", "a", 42], r"input 2 \(int\) has no known modality"),
        ([("fine", None)], r"input 0 \(tuple\) has no known modality"),
    ],
)
def test_bad_text_items_are_named_by_their_position_in_the_batch_with_a_note_on_encodes_order(
    tiny_model, batch, message
):
    # encode() sorts the inputs by length and preprocesses them batch by batch; a module sees only its batch
    with pytest.raises(
        ValueError, match=message + r".*Positions count within the batch being preprocessed: model.encode sorts"
    ):
        tiny_model.encode(batch, batch_size=32)


def test_bad_item_position_is_the_one_in_the_batch_given_to_preprocess(tiny_model):
    with pytest.raises(ValueError, match="input 2 is None"):
        tiny_model.preprocess(["one", "two", None])
    with pytest.raises(ValueError, match="input 0 is None"):  # the last of encode's batches of 2 (sorted by length)
        tiny_model.encode(["one", "two", "a sentence of many more characters", "four", None], batch_size=2)


def test_empty_and_whitespace_text_is_encoded_as_the_plain_export_encodes_it(tiny_model, tmp_path):
    texts = ["", " ", " \t\n\u3000", "A man is playing a guitar.", ""]
    export_text_model(tiny_model, tmp_path / "export")
    plain = SentenceTransformer(str(tmp_path / "export"))
    for batch_size in (32, 1):
        full = tiny_model.encode(texts, batch_size=batch_size)
        np.testing.assert_allclose(full, plain.encode(texts, batch_size=batch_size), rtol=0, atol=1e-6)
    single = tiny_model.encode([""])[0]
    assert np.isfinite(single).all()
    np.testing.assert_allclose(full[0], single, rtol=0, atol=1e-6)
    assert np.abs(full[0] - full[3]).max() > 1e-3  # "" is its own input ([CLS] [SEP]), not a copy of another row


def test_mixed_modality_batch_names_both_items(encoder):
    router = ModalityRouter.from_encoder(encoder, front_ends={"audio": ToyFrontEnd(32)})
    with pytest.raises(ValueError, match="input 0 is 'text' but input 2 is 'audio'"):
        router.preprocess(["a sentence", "another", np.zeros(16)])


def test_save_and_reload_gives_identical_embeddings_and_declares_the_package(tiny_encoder_dir, tmp_path):
    model = build_sentence_model(tiny_encoder_dir, pooling="cls_mlp")
    sentences = ["A man is playing a guitar.", "A woman slices an onion."]
    expected = model.encode(sentences)
    model.save(str(tmp_path))
    config = json.loads((tmp_path / "config_sentence_transformers.json").read_text())
    assert "sbert-nonling" in config["requirements"]
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert modules[0]["type"] == "sbert_nonling.modules.modality_router.ModalityRouter"
    with pytest.raises(ValueError, match="trust_remote_code"):
        SentenceTransformer(str(tmp_path))
    reloaded = SentenceTransformer(str(tmp_path), trust_remote_code=True)
    assert isinstance(reloaded[0], ModalityRouter) and isinstance(reloaded[0].encoder, SharedEncoder)
    np.testing.assert_array_equal(reloaded.encode(sentences), expected)


def test_unmet_requirement_gives_a_clean_import_error(tiny_model, tmp_path):
    tiny_model.save(str(tmp_path))
    config_path = tmp_path / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text())
    config["requirements"]["sbert-nonling"]["specifier"] = ">=999"
    config_path.write_text(json.dumps(config))
    with pytest.raises(ImportError, match="sbert-nonling"):
        SentenceTransformer(str(tmp_path), trust_remote_code=True)


def test_an_unknown_task_or_a_missing_route_is_an_error_listing_the_routes(encoder):
    model = multimodal_model(encoder)
    with pytest.raises(
        ValueError, match=r"task='bogus' selects no route of this model; its routes are \['text', 'audio'\]"
    ):
        model.encode(["a sentence"], task="bogus")
    with pytest.raises(ValueError, match=r"task='pixel' selects no route of this model"):
        model.encode(["a sentence"], task="pixel")
    plain = model.encode(["a sentence"])
    np.testing.assert_array_equal(
        model.encode_query(["a sentence"]), plain
    )  # sentence-transformers' own tasks keep working
    np.testing.assert_array_equal(model.encode(["a sentence"], task="text"), plain)


def test_a_two_dimensional_grayscale_image_is_not_read_as_audio(encoder):
    model = multimodal_model(encoder)
    with pytest.raises(
        ValueError, match=r"input 0 is a 2-D array of shape \(32, 32\), read as audio .*at most 8 channels"
    ):
        model.encode([np.zeros((32, 32), dtype=np.float32)])
    model.encode([np.zeros((2, 16), dtype=np.float32)])  # stereo audio still is audio


class FrozenProjection(FrozenModule):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.freeze()


@pytest.fixture
def train_calls(monkeypatch) -> collections.Counter[int]:
    """id(module) -> how many times torch's ``Module.train`` ran for it (ModalityRouter's own train is not counted)."""
    calls: collections.Counter[int] = collections.Counter()
    module_train = torch.nn.Module.train

    def counted_train(module, mode=True):
        calls[id(module)] += 1
        return module_train(module, mode)

    monkeypatch.setattr(torch.nn.Module, "train", counted_train)
    return calls


def test_train_and_eval_set_every_module_once_and_keep_a_frozen_part_in_eval_mode(encoder, train_calls):
    """transformers' trainer calls model.train() before every micro-batch: the encoder every route ends in is set
    once, not once per route, and a module whose train() keeps it in eval mode still decides."""
    image = ToyFrontEnd(32, "image")
    image.frozen = FrozenProjection()
    router = ModalityRouter.from_encoder(encoder, front_ends={"audio": ToyFrontEnd(32), "image": image})
    model = SentenceTransformer(modules=[router, Pooling(32, pooling_mode="cls")])
    containers = {id(router), id(router.sub_modules), *(id(chain) for chain in router.sub_modules.values())}
    for mode in (False, True):
        train_calls.clear()
        model.train(mode)
        reached = [module for module in router.modules() if id(module) not in containers]
        assert reached and all(train_calls[id(module)] == 1 for module in reached)
        frozen = set(map(id, image.frozen.modules()))
        for module in model.modules():
            assert module.training is (mode and id(module) not in frozen), type(module).__name__
    with pytest.raises(ValueError, match=r"train\(mode='yes'\): mode must be True"):
        router.train("yes")


def test_train_again_in_the_same_mode_sets_nothing_until_a_module_changes(encoder, train_calls):
    """From the trainer's second micro-batch on, model.train() finds every module as the last train() left it and
    sets none; a module switched to eval mode, or a route added, since then is set as before."""
    image = ToyFrontEnd(32, "image")
    image.frozen = FrozenProjection()
    router = ModalityRouter.from_encoder(encoder, front_ends={"image": image})
    model = SentenceTransformer(modules=[router, Pooling(32, pooling_mode="cls")])
    model.train()
    train_calls.clear()
    model.train()
    assert train_calls[id(model)] == 1 and train_calls[id(encoder)] == 0 and train_calls[id(image)] == 0
    assert encoder.training and image.training and not image.frozen.training

    encoder.model.encoder.eval()  # a user's switch between two steps
    model.train()
    assert train_calls[id(encoder)] == 1 and all(module.training for module in encoder.modules())
    assert not image.frozen.training  # the frozen part still decides

    audio = ToyFrontEnd(32).eval()
    router.add_route("audio", audio)
    train_calls.clear()
    model.train()
    assert audio.training and train_calls[id(audio)] == 1 and train_calls[id(encoder)] == 1

    model.eval()
    assert not any(module.training for module in model.modules())
    train_calls.clear()
    model.train()
    assert train_calls[id(encoder)] == 1 and encoder.training and not image.frozen.training
