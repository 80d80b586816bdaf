"""A run SIGKILLed, stopped by SIGTERM / SIGINT (once, or twice while saving) or by a full disk, then resumed, ends
exactly as the uninterrupted run (its batch counts included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from sbert_nonling.training.checkpoints import COMPLETE_MARKER, checkpoint_damage, last_complete_checkpoint
from sbert_nonling.training.loss_state import LOSS_STATE_FILE

WORKER = Path(__file__).with_name("resume_worker.py")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, data_dir, flickr_subset):
    root = tmp_path_factory.mktemp("resume-inputs")
    lines = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()[:200]
    (root / "wiki.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # MCSE: 6 text batches of 8 and the captions' 2, a caption batch after every 3 text ones (steps 4 and 8)
    (root / "wiki-short.txt").write_text("\n".join(lines[:48]) + "\n", encoding="utf-8")
    images = root / "images"
    for label in ("cat", "dog", "ship"):  # 3 classes x 16 CIFAR-10 images
        (images / label).mkdir(parents=True)
        for path in sorted((data_dir / "images" / "cifar10" / "train" / label).iterdir())[:16]:
            (images / label / path.name).symlink_to(path.resolve())
    return {
        "text": root / "wiki.txt",
        "short_text": root / "wiki-short.txt",
        "images": images,
        "flickr": flickr_subset,
    }


def _run(recipe: str, output: Path, inputs, *extra: str) -> subprocess.CompletedProcess:
    text = inputs["short_text"] if recipe in ("mcse", "kdmcse", "dalr") else inputs["text"]
    command = [sys.executable, str(WORKER), recipe, "--output", str(output), "--text-file", str(text)]
    if recipe.startswith("visualcse"):
        command += ["--image-dir", str(inputs["images"])]
    else:
        flickr = inputs["flickr"]
        command += ["--image-dir", str(flickr / "images"), "--captions-file", str(flickr / "captions.txt")]
        if recipe == "mcse":
            command += ["--image-features", str(flickr / "features.safetensors")]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    return subprocess.run(command + list(extra), capture_output=True, text=True, timeout=600, env=environment)


def _finished(recipe: str, output: Path, inputs, *extra: str) -> None:
    completed = _run(recipe, output, inputs, *extra)
    assert completed.returncode == 0, completed.stderr[-4000:]


def _outcome(
    output: Path,
) -> tuple[dict[str, torch.Tensor], list[float], dict[str, torch.Tensor], dict[str, int]]:
    final = output / "checkpoints" / "checkpoint-8"
    weights = {}
    for path in sorted((output / "model").rglob("*.safetensors")):
        weights.update({f"{path.parent.name}/{key}": value for key, value in load_file(str(path)).items()})
    history = json.loads((final / "trainer_state.json").read_text())["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry]
    step_counts = json.loads((output / "results.json").read_text())["step_counts"]
    return weights, losses, load_file(str(final / LOSS_STATE_FILE)), step_counts


@pytest.fixture(scope="module")
def straight(tmp_path_factory, inputs):
    """The uninterrupted run of each recipe (made once, on first use): its final weights, logged losses, loss heads."""
    outcomes = {}

    def outcome(recipe: str):
        if recipe not in outcomes:
            output = tmp_path_factory.mktemp(f"straight-{recipe}")
            _finished(recipe, output, inputs)
            outcomes[recipe] = _outcome(output)
        return outcomes[recipe]

    return outcome


def _assert_same_run(resumed: Path, expected) -> None:
    weights, losses, loss_state, step_counts = expected
    resumed_weights, resumed_losses, resumed_loss_state, resumed_step_counts = _outcome(resumed)
    assert len(losses) == 8 and resumed_losses == losses
    assert resumed_step_counts == step_counts  # the batches of the whole run, not only of its resumed steps
    assert weights.keys() == resumed_weights.keys() and loss_state.keys() == resumed_loss_state.keys()
    for key in weights:
        torch.testing.assert_close(resumed_weights[key], weights[key], rtol=0, atol=0, msg=key)
    for key in loss_state:  # the losses' heads (VisualCSE's image MLP, SimCSE's MLP, (KD)MCSE's projection heads)
        torch.testing.assert_close(resumed_loss_state[key], loss_state[key], rtol=0, atol=0, msg=key)


@pytest.mark.parametrize("recipe", ["visualcse", "visualcse-fast", "mcse", "kdmcse", "dalr"])
def test_killed_and_resumed_run_equals_the_uninterrupted_run(tmp_path, inputs, straight, recipe):
    assert _run(recipe, tmp_path / "killed", inputs, "--die-at-step", "5").returncode == -9  # SIGKILL after step 5
    checkpoints = tmp_path / "killed" / "checkpoints"
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-4")
    assert not (tmp_path / "killed" / "model").exists()
    _finished(recipe, tmp_path / "killed", inputs, "--resume")
    _assert_same_run(tmp_path / "killed", straight(recipe))


def test_a_kill_while_saving_never_leaves_a_checkpoint_resume_would_pick(tmp_path, inputs, straight):
    assert _run("visualcse", tmp_path / "killed", inputs, "--die-while-saving", "6").returncode == -9
    checkpoints = tmp_path / "killed" / "checkpoints"
    assert (checkpoints / "checkpoint-6").is_dir() and not (checkpoints / "checkpoint-6" / COMPLETE_MARKER).exists()
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-4")
    _finished("visualcse", tmp_path / "killed", inputs, "--resume")
    _assert_same_run(tmp_path / "killed", straight("visualcse"))


@pytest.mark.slow  # 2-3 tiny training runs in subprocesses
@pytest.mark.parametrize(("recipe", "signal_name", "status"), [("visualcse", "SIGTERM", 143), ("mcse", "SIGINT", 130)])
def test_a_signal_stops_after_the_step_with_a_complete_checkpoint_and_resume_ends_identical(
    tmp_path, inputs, straight, recipe, signal_name, status
):
    # VisualCSE: the alternating scheme, two optimizers; MCSE: projection heads, interleaved caption batches
    stopped = _run(recipe, tmp_path / "run", inputs, "--signal", signal_name, "--signal-at-step", "4")
    assert stopped.returncode == status, stopped.stderr[-4000:]
    checkpoints = tmp_path / "run" / "checkpoints"
    assert f"Training stopped by {signal_name}" in stopped.stderr and "--resume" in stopped.stderr
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-5")  # step 5 finished, then saved
    assert (
        checkpoint_damage(checkpoints / "checkpoint-5") is None
        and (checkpoints / "checkpoint-5" / LOSS_STATE_FILE).is_file()
    )
    assert not (tmp_path / "run" / "model").exists() and not (tmp_path / "run" / "results.json").exists()
    _finished(recipe, tmp_path / "run", inputs, "--resume")
    _assert_same_run(tmp_path / "run", straight(recipe))


@pytest.mark.slow  # 2-3 tiny training runs in subprocesses
def test_a_second_signal_while_saving_exits_at_once_and_the_half_written_checkpoint_is_never_used(
    tmp_path, inputs, straight
):
    stopped = _run("visualcse", tmp_path / "run", inputs, "--signal-at-step", "4", "--signal-again-while-saving", "5")
    assert stopped.returncode == 143 and "SIGTERM again: exiting now" in stopped.stderr
    checkpoints = tmp_path / "run" / "checkpoints"
    assert (checkpoints / "checkpoint-5").is_dir() and not (checkpoints / "checkpoint-5" / COMPLETE_MARKER).exists()
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-4")
    _finished("visualcse", tmp_path / "run", inputs, "--resume")
    _assert_same_run(tmp_path / "run", straight("visualcse"))


@pytest.mark.slow  # 2-3 tiny training runs in subprocesses
def test_a_full_disk_stops_the_run_keeps_the_earlier_checkpoint_and_resume_ends_identical(tmp_path, inputs, straight):
    failed = _run("visualcse", tmp_path / "run", inputs, "--disk-full-at-checkpoint", "4")
    checkpoints = tmp_path / "run" / "checkpoints"
    assert failed.returncode == 1, failed.stderr[-4000:]
    # the CLI's one-line message (train.log cannot grow either: logging reports that on stderr as well)
    message = next(line for line in failed.stderr.splitlines() if line.startswith("sbert-nonling train: error:"))
    assert message.startswith(f"sbert-nonling train: error: Could not write {checkpoints / 'checkpoint-4'}: ")
    assert "MiB are free" in message and "(checkpoint-2) are intact" in message and "--resume" in message
    assert (
        checkpoint_damage(checkpoints / "checkpoint-2") is None
        and not (checkpoints / "checkpoint-4" / COMPLETE_MARKER).exists()
    )
    _finished("visualcse", tmp_path / "run", inputs, "--resume")  # space freed: the limit was this process's only
    _assert_same_run(tmp_path / "run", straight("visualcse"))


@pytest.mark.slow  # 3 tiny training runs in subprocesses
def test_dataloader_workers_give_the_same_run_and_resume_exactly(tmp_path, inputs, straight):
    """Two persistent workers decode and augment the images: the views are seeded by the pass each index carries, so
    the run equals the one without workers, and a SIGKILL + resume with workers ends identical too."""
    _finished("visualcse", tmp_path / "workers", inputs, "--workers", "2")
    _assert_same_run(tmp_path / "workers", straight("visualcse"))
    assert json.loads((tmp_path / "workers" / "results.json").read_text())["dataloader_num_workers"] == 2
    assert _run("visualcse", tmp_path / "killed", inputs, "--workers", "2", "--die-at-step", "5").returncode == -9
    _finished("visualcse", tmp_path / "killed", inputs, "--workers", "2", "--resume")
    _assert_same_run(tmp_path / "killed", straight("visualcse"))


@pytest.mark.slow  # 1 tiny training run per recipe in a subprocess
@pytest.mark.parametrize("recipe", ["kdmcse", "dalr"])
def test_dataloader_workers_give_the_clip_teacher_recipes_the_same_run(tmp_path, inputs, straight, recipe):
    """Two workers collate the caption batches and their (2, d) CLIP labels; DALR's shuffled mismatches and frozen
    teachers stay in the main process: the run equals the one without workers."""
    _finished(recipe, tmp_path / "workers", inputs, "--workers", "2")
    _assert_same_run(tmp_path / "workers", straight(recipe))
    assert json.loads((tmp_path / "workers" / "results.json").read_text())["dataloader_num_workers"] == 2


@pytest.mark.slow  # 3-4 tiny training runs in subprocesses
@pytest.mark.parametrize(
    ("interruption", "status"),
    [(("--signal-at-step", "7"), 143), (("--die-while-saving-model",), -9), (("--disk-full-at-final-save",), 1)],
    ids=["sigterm-in-the-last-step", "kill-in-the-final-save", "disk-full-in-the-final-save"],
)
def test_a_run_interrupted_after_its_last_step_only_finishes_saving_on_resume(
    tmp_path, inputs, straight, interruption, status
):
    stopped = _run("visualcse", tmp_path / "run", inputs, *interruption)
    assert stopped.returncode == status, stopped.stderr[-4000:]
    checkpoints = tmp_path / "run" / "checkpoints"
    assert last_complete_checkpoint(checkpoints) == str(checkpoints / "checkpoint-8")  # training is complete
    assert not (tmp_path / "run" / "results.json").exists() and not (tmp_path / "run" / "model").exists()
    if status == 1:  # one sentence naming the folder and what to do
        message = next(line for line in stopped.stderr.splitlines() if line.startswith("sbert-nonling train: error:"))
        assert (
            f"Could not write {tmp_path / 'run' / 'model'}" in message
            and "training is complete" in message
            and "--resume" in message
        )
    rerun = _run("visualcse", tmp_path / "run", inputs)  # without --resume: refused, nothing touched
    assert rerun.returncode == 2 and "interrupted run" in rerun.stderr and "--resume" in rerun.stderr
    _finished("visualcse", tmp_path / "run", inputs, "--resume")
    assert json.loads((tmp_path / "run" / "results.json").read_text())["global_step"] == 8  # not 9: no step twice
    _assert_same_run(tmp_path / "run", straight("visualcse"))
