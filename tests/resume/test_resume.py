"""A run SIGKILLed mid-training (or while saving) and resumed ends exactly as the uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from sbert_nonling.training.trainer import COMPLETE_MARKER, LOSS_STATE_FILE, last_complete_checkpoint

WORKER = Path(__file__).with_name("resume_worker.py")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, data_dir, flickr_subset):
    root = tmp_path_factory.mktemp("resume-inputs")
    lines = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:200]
    (root / "wiki.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    images = root / "images"
    for label in ("cat", "dog", "ship"):  # 3 classes x 16 CIFAR-10 images
        (images / label).mkdir(parents=True)
        for path in sorted((data_dir / "images" / "cifar10" / "train" / label).iterdir())[:16]:
            (images / label / path.name).symlink_to(path.resolve())
    return {"text": root / "wiki.txt", "images": images, "flickr": flickr_subset}


def _run(recipe: str, output: Path, inputs, *extra: str) -> int:
    command = [sys.executable, str(WORKER), recipe, "--output", str(output), "--text-file", str(inputs["text"])]
    if recipe.startswith("visualcse"):
        command += ["--image-dir", str(inputs["images"])]
    else:
        flickr = inputs["flickr"]
        command += ["--image-dir", str(flickr / "images"), "--captions-file", str(flickr / "captions.txt"),
                    "--image-features", str(flickr / "features.safetensors")]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    completed = subprocess.run(command + list(extra), capture_output=True, text=True, timeout=600, env=environment)
    assert completed.returncode in (0, -9), completed.stderr[-4000:]
    return completed.returncode


def _outcome(output: Path) -> tuple[dict[str, torch.Tensor], list[float], dict[str, torch.Tensor]]:
    final = output / "checkpoints" / "checkpoint-8"
    weights = {}
    for path in sorted((output / "model").rglob("*.safetensors")):
        weights.update({f"{path.parent.name}/{key}": value for key, value in load_file(str(path)).items()})
    history = json.loads((final / "trainer_state.json").read_text())["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry]
    return weights, losses, load_file(str(final / LOSS_STATE_FILE))


@pytest.mark.parametrize("recipe", ["visualcse", "visualcse-fast", "mcse"])
def test_killed_and_resumed_run_equals_the_uninterrupted_run(tmp_path, inputs, recipe):
    assert _run(recipe, tmp_path / "straight", inputs) == 0
    assert _run(recipe, tmp_path / "killed", inputs, "--die-at-step", "5") == -9  # SIGKILL after step 5
    checkpoints = tmp_path / "killed" / "checkpoints"
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-4")
    assert not (tmp_path / "killed" / "model").exists()
    assert _run(recipe, tmp_path / "killed", inputs, "--resume") == 0

    weights, losses, loss_state = _outcome(tmp_path / "straight")
    resumed_weights, resumed_losses, resumed_loss_state = _outcome(tmp_path / "killed")
    assert len(losses) == 8 and resumed_losses == losses
    assert weights.keys() == resumed_weights.keys() and loss_state.keys() == resumed_loss_state.keys()
    for key in weights:
        torch.testing.assert_close(resumed_weights[key], weights[key], rtol=0, atol=0, msg=key)
    for key in loss_state:  # the losses' heads (VisualCSE's image MLP, SimCSE's MLP, MCSE's projection heads)
        torch.testing.assert_close(resumed_loss_state[key], loss_state[key], rtol=0, atol=0, msg=key)


def test_a_kill_while_saving_never_leaves_a_checkpoint_resume_would_pick(tmp_path, inputs):
    assert _run("visualcse", tmp_path / "straight", inputs) == 0
    assert _run("visualcse", tmp_path / "killed", inputs, "--die-while-saving", "6") == -9
    checkpoints = tmp_path / "killed" / "checkpoints"
    assert (checkpoints / "checkpoint-6").is_dir() and not (checkpoints / "checkpoint-6" / COMPLETE_MARKER).exists()
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-4")
    assert _run("visualcse", tmp_path / "killed", inputs, "--resume") == 0
    weights, losses, _ = _outcome(tmp_path / "straight")
    resumed_weights, resumed_losses, _ = _outcome(tmp_path / "killed")
    assert resumed_losses == losses
    for key in weights:
        torch.testing.assert_close(resumed_weights[key], weights[key], rtol=0, atol=0, msg=key)
