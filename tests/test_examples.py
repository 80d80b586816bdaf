"""Every script in examples/ runs end to end in its offline mode, and leaves what it says it leaves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SENTENCES = ["A man is playing a guitar.", "", "Two dogs run through a field."]

#: Scripts that compose their own trainer: ``--tiny`` with local data, leaving OUT/model and OUT/export.
COMPOSED = [
    ("train_simcse.py", ["--text", "{text}"]),
    ("train_visualcse.py", ["--text", "{text}", "--images", "{data}/images/cifar10/train"]),
    ("train_audiocse.py", ["--text", "{text}", "--audio", "{data}/audio/fsdd", "--speaker-regex", r"^\d+_([a-z]+)_"]),
    ("train_mcse.py", ["--text", "{text}", "--captions", "{flickr}/captions.txt", "--image-dir", "{flickr}/images"]),
    (
        "train_kdmcse.py",
        ["--text", "{text}", "--captions", "{flickr}/captions.txt", "--image-dir", "{flickr}/images", "--bf16"],
    ),
    (
        "train_dalr.py",
        ["--text", "{text}", "--captions", "{flickr}/captions.txt", "--image-dir", "{flickr}/images", "--bf16"],
    ),
    ("train_macd.py", ["--captions", "{flickr}/captions.txt", "--image-dir", "{flickr}/images"]),
    (
        "train_multitask.py",
        ["--nli", "{data}/corpus/snli_devtest_triplets.csv", "--task-dir", "{data}/sts", "--train-limit", "200"],
    ),
]


def _run(command: list[str]) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


@pytest.fixture
def small_text(tmp_path, data_dir) -> Path:
    text_file = tmp_path / "wiki.txt"
    lines = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:300]
    text_file.write_text("\n".join(lines), encoding="utf-8")
    return text_file


@pytest.mark.slow
@pytest.mark.parametrize(("script", "extra"), COMPOSED, ids=[script for script, _ in COMPOSED])
def test_composed_example_trains_saves_and_exports(
    script, extra, tmp_path, data_dir, small_sts_dir, flickr_subset, small_text
):
    extra = [arg.format(data=data_dir, flickr=flickr_subset, text=small_text) for arg in extra]
    output = tmp_path / "run"
    stdout = _run(
        [
            sys.executable,
            str(EXAMPLES / script),
            "--tiny",
            "--max-steps",
            "2",
            "--sts-dir",
            str(small_sts_dir),
            "--output",
            str(output),
            *extra,
        ]
    )
    dev = [line for line in stdout.splitlines() if line.startswith("STS-B dev after training: ")]
    assert len(dev) == 1 and -100 <= float(dev[0].rsplit(" ", 1)[1]) <= 100
    full = SentenceTransformer(str(output / "model"), trust_remote_code=True)
    plain = SentenceTransformer(str(output / "export"))  # built-in modules only
    assert {type(module).__module__.split(".")[0] for module in plain} == {"sentence_transformers"}
    np.testing.assert_allclose(plain.encode(SENTENCES), full.encode(SENTENCES), atol=1e-6)


@pytest.mark.slow
def test_pixel_linguist_example_runs_the_curriculum_and_saves_a_pixel_model(
    tmp_path, data_dir, small_sts_dir, small_text
):
    output = tmp_path / "run"
    stdout = _run(
        [
            sys.executable,
            str(EXAMPLES / "train_pixel_linguist.py"),
            "--tiny",
            "--max-steps",
            "2",
            "--text",
            str(small_text),
            "--nli",
            str(data_dir / "corpus" / "snli_devtest_triplets.csv"),
            "--sts-dir",
            str(small_sts_dir),
            "--output",
            str(output),
        ]
    )
    runs = [line.split(":")[0] for line in stdout.splitlines() if ": 2 steps, STS-B dev " in line]
    assert runs == ["visual-0-substitute_visual+swap", "visual-1-conditional_shuffle", "topical", "reasoning"]
    dev = [line for line in stdout.splitlines() if line.startswith("STS-B dev after training: ")]
    assert len(dev) == 1 and -100 <= float(dev[0].rsplit(" ", 1)[1]) <= 100
    assert not (output / "export").exists()  # text read as pixels: no token route to export
    model = SentenceTransformer(str(output / "model"), trust_remote_code=True)
    embeddings = model.encode([SENTENCES[0], SENTENCES[2]], convert_to_numpy=True)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), [1.0, 1.0], atol=1e-5)
    assert not np.allclose(embeddings[0], embeddings[1])


def test_feature_extraction_example(tmp_path, flickr_subset):
    stdout = _run(
        [
            sys.executable,
            str(EXAMPLES / "extract_image_features.py"),
            "--image-dir",
            str(flickr_subset / "images"),
            "--encoder",
            "efficientnet-lite0",
            "--limit",
            "2",
            "--output",
            str(tmp_path / "features.safetensors"),
        ]
    )
    assert "2 images ->" in stdout
