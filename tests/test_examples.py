"""Every script in examples/ runs end to end in its offline smoke mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    ("script", "extra"),
    [
        ("train_simcse.py", []),
        ("train_visualcse.py", ["--image-dir", "{data}/images/cifar10/train"]),
        ("train_audiocse.py", ["--audio-dir", "{data}/audio/fsdd", "--speaker-regex", r"^\d+_([a-z]+)_"]),
        ("train_mcse.py", ["--captions-file", "{flickr}/captions.txt", "--image-dir", "{flickr}/images", "--image-features", "{flickr}/features.safetensors"]),
        ("train_macd.py", ["--captions-file", "{flickr}/captions.txt", "--image-dir", "{flickr}/images", "--image-features", "{flickr}/features.safetensors"]),
        ("train_pixel_linguist.py", ["--nli-file", "{data}/corpus/snli_devtest_triplets.csv"]),
        ("train_multitask.py", ["--nli-file", "{data}/corpus/snli_devtest_triplets.csv", "--task-dir", "{data}/sts", "--train-limit", "200"]),
        ("extract_image_features.py", ["--image-dir", "{flickr}/images", "--encoder", "efficientnet-lite0", "--limit", "2"]),
    ],
)
def test_example_runs_offline(script, extra, tmp_path, data_dir, small_sts_dir, flickr_subset):
    text_file = tmp_path / "wiki.txt"
    text_file.write_text("\n".join((data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:300]), encoding="utf-8")
    extra = [arg.format(data=data_dir, flickr=flickr_subset) for arg in extra]
    if script == "extract_image_features.py":
        command = [sys.executable, str(EXAMPLES / script), *extra, "--output", str(tmp_path / "features.safetensors")]
    else:
        text = [] if script == "train_macd.py" else ["--text-file", str(text_file)]
        command = [sys.executable, str(EXAMPLES / script), "--tiny", "--max-steps", "2", *text, "--sts-dir", str(small_sts_dir),
                   "--output", str(tmp_path / "run"), *extra]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    expected = "2 images ->" if script == "extract_image_features.py" else "after"
    assert expected in completed.stdout
