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
    ("train_macd.py", ["--captions", "{flickr}/captions.txt", "--image-dir", "{flickr}/images"]),
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
def test_composed_example_trains_saves_and_exports(script, extra, tmp_path, data_dir, small_sts_dir, flickr_subset, small_text):
    extra = [arg.format(data=data_dir, flickr=flickr_subset, text=small_text) for arg in extra]
    output = tmp_path / "run"
    stdout = _run([sys.executable, str(EXAMPLES / script), "--tiny", "--max-steps", "2", "--sts-dir", str(small_sts_dir),
                   "--output", str(output), *extra])
    dev = [line for line in stdout.splitlines() if line.startswith("STS-B dev after training: ")]
    assert len(dev) == 1 and -100 <= float(dev[0].rsplit(" ", 1)[1]) <= 100
    full = SentenceTransformer(str(output / "model"), trust_remote_code=True)
    plain = SentenceTransformer(str(output / "export"))  # built-in modules only
    assert {type(module).__module__.split(".")[0] for module in plain} == {"sentence_transformers"}
    np.testing.assert_allclose(plain.encode(SENTENCES), full.encode(SENTENCES), atol=1e-6)


@pytest.mark.parametrize(
    ("script", "extra"),
    [
        ("train_pixel_linguist.py", ["--nli-file", "{data}/corpus/snli_devtest_triplets.csv"]),
        ("train_multitask.py", ["--nli-file", "{data}/corpus/snli_devtest_triplets.csv", "--task-dir", "{data}/sts", "--train-limit", "200"]),
    ],
)
def test_recipe_example_runs_offline(script, extra, tmp_path, data_dir, small_sts_dir, small_text):
    extra = [arg.format(data=data_dir) for arg in extra]
    stdout = _run([sys.executable, str(EXAMPLES / script), "--tiny", "--max-steps", "2", "--text-file", str(small_text),
                   "--sts-dir", str(small_sts_dir), "--output", str(tmp_path / "run"), *extra])
    assert "after" in stdout


def test_feature_extraction_example(tmp_path, flickr_subset):
    stdout = _run([sys.executable, str(EXAMPLES / "extract_image_features.py"), "--image-dir", str(flickr_subset / "images"),
                   "--encoder", "efficientnet-lite0", "--limit", "2", "--output", str(tmp_path / "features.safetensors")])
    assert "2 images ->" in stdout
