"""Shared fixtures: the ../shared data folder and a tiny random-weight encoder built offline (no network)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MTEB_CACHE", tempfile.mkdtemp(prefix="mteb-cache-"))  # importing mteb creates its cache folder

import pytest  # noqa: E402

#: Absolute, so that subprocesses started in other working directories find it too.
SHARED_DIR = Path(
    os.environ.get("SBERT_NONLING_SHARED", Path(__file__).resolve().parents[1] / ".." / "shared")
).resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = SHARED_DIR / "data"
    if not path.is_dir():
        pytest.fail(f"The shared data folder {path} is missing; set SBERT_NONLING_SHARED to the shared/ folder.")
    return path


@pytest.fixture(scope="session")
def wiki_sentences(data_dir) -> list[str]:
    from sbert_nonling.data import read_sentences

    return read_sentences(data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt", limit=2000)


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory, wiki_sentences) -> str:
    from sbert_nonling.models import build_tiny_encoder

    return str(
        build_tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"), wiki_sentences, vocab_size=2000, hidden_size=32)
    )


@pytest.fixture(scope="session")
def tiny_clip_dir(tmp_path_factory, data_dir) -> str:
    """A tiny random CLIP (16-d embeddings) whose vocabulary comes from the Flickr8k captions."""
    from sbert_nonling.models import build_tiny_clip

    tokens = (data_dir / "corpus" / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    captions = [line.partition("\t")[2] for line in tokens[:500]]
    return str(build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"), captions, projection_dim=16))


@pytest.fixture(scope="session")
def tiny_vit_dir(tmp_path_factory) -> Path:
    """A saved random ViT (32-px images, 8-px patches, width 32, one layer), as ``ImagePatchEmbed.from_vit`` reads."""
    from transformers import ViTConfig, ViTModel

    folder = tmp_path_factory.mktemp("tiny-vit")
    config = ViTConfig(
        image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    ViTModel(config).save_pretrained(folder)
    return folder


@pytest.fixture
def tiny_model(tiny_encoder_dir):
    from sbert_nonling.models import build_sentence_model

    return build_sentence_model(tiny_encoder_dir, pooling="cls", max_seq_length=32)


@pytest.fixture(scope="session")
def small_sts_dir(tmp_path_factory, data_dir) -> Path:
    """The first 60 pairs of STS-B dev and SICK trial, in SentEval's layout (fast enough for training tests)."""
    root = tmp_path_factory.mktemp("sts")
    for folder, name in (("STSBenchmark", "sts-dev.csv"), ("SICK", "SICK_trial.txt")):
        (root / folder).mkdir()
        lines = (data_dir / "sts" / folder / name).read_text(encoding="utf-8").splitlines()[:60]
        (root / folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def flickr_subset(tmp_path_factory, data_dir):
    """12 Flickr8k photos with their 60 captions, and their EfficientNet-Lite0 features (global and 7 x 7 regions)."""
    import shutil

    from sbert_nonling.data import FrozenImageEncoder
    from sbert_nonling.data.image_features import extract_image_features, save_image_features

    root = tmp_path_factory.mktemp("flickr")
    (root / "images").mkdir()
    names = sorted(path.name for path in (data_dir / "images" / "flickr8k").iterdir())[:12]
    for name in names:
        shutil.copy(data_dir / "images" / "flickr8k" / name, root / "images" / name)
    tokens = (data_dir / "corpus" / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    (root / "captions.txt").write_text(
        "\n".join(line for line in tokens if line.split("#")[0] in names) + "\n", encoding="utf-8"
    )
    features = extract_image_features(
        [root / "images" / name for name in names], FrozenImageEncoder.efficientnet_lite0(), regions=True
    )
    save_image_features(root / "features.safetensors", names, features)
    return root


def cited(model_folder: str | Path) -> set[str]:
    """The BibTeX keys a saved model's card (README.md) cites."""
    import re

    return set(re.findall(r"@\w+\{([^,]+),", (Path(model_folder) / "README.md").read_text(encoding="utf-8")))


def tiny_train_argv(text_file: Path, output: Path, *extra: str) -> list[str]:
    """The arguments of ``sbert-nonling train simcse-unsup --tiny`` on ``text_file`` into ``output``, then ``extra``
    flags (for ``sbert_nonling.cli.main`` in this process)."""
    return ["train", "simcse-unsup", "--tiny", "--text-file", str(text_file), "--output", str(output), *extra]


def tiny_train_command(text_file: Path, output: Path, *extra: str) -> list[str]:
    """The command of a real ``sbert-nonling train simcse-unsup --tiny`` process on ``text_file`` into ``output``
    (batch 8), then ``extra`` flags; run it with :func:`cli_environment`."""
    argv = tiny_train_argv(text_file, output, "--set", "batch_size=8", *extra)
    return [sys.executable, "-m", "sbert_nonling.cli", *argv]


def cli_environment() -> dict[str, str]:
    """The environment of a test's own process of this checkout, offline."""
    checkout = str(Path(__file__).resolve().parents[1])
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([checkout, os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
    }


def wiki_file(path: Path, lines: int) -> Path:
    """The first ``lines`` sentences of the shared wiki sample written to ``path`` (a training text file)."""
    sentences = (
        (SHARED_DIR / "data" / "corpus" / "wiki1m_for_simcse.first11913.txt")
        .read_text(encoding="utf-8")
        .splitlines()[:lines]
    )
    path.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return path
