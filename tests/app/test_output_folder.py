"""A run folder holding a finished or interrupted run is never replaced without overwrite, and with overwrite only by a
run that has finished; resume needs something to resume."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sbert_nonling.app import train_recipe
from sbert_nonling.app.output_folder import INCOMING, RunFolder, check_output_dir, complete_replacement
from sbert_nonling.data import DataSources
from sbert_nonling.training.checkpoints import COMPLETE_MARKER, write_complete_marker
from tests.conftest import cli_environment, tiny_train_command, wiki_file


def finished_run(folder):
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "model.safetensors").write_bytes(b"weights")
    (folder / "results.json").write_text("{}")
    (folder / "train.log").write_text("the earlier run's log\n")
    (folder / "notes.txt").write_text("the user's own file\n")
    checkpoint(folder / "checkpoints", 8)
    return folder


def checkpoint(folder, step, complete=True):
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "optimizer.pt").write_bytes(b"state")
    if complete:
        write_complete_marker(path, step)
    return path


def tree(folder):
    """Every file under ``folder`` but the lock every run takes (relative path -> SHA-256 of its bytes)."""
    files = [path for path in sorted(folder.rglob("*")) if path.is_file() and path.name != ".run.lock"]
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def new_run(folder):
    """A finished new run written into ``folder`` (a replacement's .incoming): model, export, checkpoints, results."""
    for name in ("model", "export"):
        (folder / name).mkdir(parents=True)
        (folder / name / "model.safetensors").write_bytes(b"new " + name.encode())
    checkpoint(folder / "checkpoints", 2)
    (folder / "recipe.json").write_text('{"new": true}')
    (folder / "results.json").write_text('{"new": true}')
    return folder


def test_a_new_or_empty_folder_is_written_in_place(tmp_path):
    assert check_output_dir(tmp_path / "new") == RunFolder(tmp_path / "new")
    assert check_output_dir(tmp_path, overwrite=True).run_dir == tmp_path  # nothing to replace
    assert not (tmp_path / "new").exists()


def test_a_finished_run_is_refused_and_left_untouched(tmp_path):
    run = finished_run(tmp_path / "run")
    before = tree(run)
    with pytest.raises(
        ValueError, match=r"already holds a finished run \(results.json, model\).*--overwrite.*--resume continues"
    ):
        check_output_dir(run)
    with pytest.raises(ValueError, match=r"holds a finished run \(results.json\): there is nothing to resume"):
        check_output_dir(run, resume=True)
    with pytest.raises(ValueError, match="either --resume .* or --overwrite"):
        check_output_dir(run, resume=True, overwrite=True)
    assert tree(run) == before


def test_overwrite_keeps_the_earlier_run_until_the_new_one_has_finished(tmp_path):
    run = finished_run(tmp_path / "run")
    (run / "stages").mkdir()  # an entry of the earlier run that the new run does not write
    folder = check_output_dir(run, overwrite=True)
    assert folder.replacing and folder.begin() == run / INCOMING
    earlier = {name: digest for name, digest in tree(run).items() if not name.startswith(INCOMING)}
    new_run(folder.run_dir)
    assert {name: digest for name, digest in tree(run).items() if not name.startswith(INCOMING)} == earlier
    expected = tree(folder.run_dir)
    folder.finish()
    after = tree(run)
    assert {name: digest for name, digest in after.items() if name not in ("notes.txt", "train.log")} == expected
    assert (run / "notes.txt").read_text() == "the user's own file\n" and (run / "train.log").exists()
    assert not (run / "stages").exists() and not (run / INCOMING).exists()


@pytest.mark.parametrize("checkpoints", ["checkpoints", "stages/contrastive/checkpoints"])
def test_an_interrupted_run_needs_resume_or_overwrite(tmp_path, checkpoints):
    checkpoint(tmp_path / checkpoints, 4)
    with pytest.raises(
        ValueError, match=rf"checkpoints of an interrupted run \({checkpoints}/checkpoint-4\).*--resume"
    ):
        check_output_dir(tmp_path)
    assert check_output_dir(tmp_path, resume=True) == RunFolder(tmp_path)
    with pytest.raises(ValueError, match="This recipe does not resume: pass --overwrite"):
        check_output_dir(tmp_path, resumable=False)
    assert check_output_dir(tmp_path, overwrite=True).replacing  # its checkpoints stay until the new run has finished


def test_resume_without_a_complete_checkpoint_says_so(tmp_path):
    with pytest.raises(ValueError, match="holds no complete checkpoint to resume from. Run without --resume"):
        check_output_dir(tmp_path, resume=True)
    checkpoint(tmp_path / "checkpoints", 2, complete=False)  # killed while writing its first checkpoint
    with pytest.raises(ValueError, match="holds no complete checkpoint"):
        check_output_dir(tmp_path, resume=True)
    assert check_output_dir(tmp_path) == RunFolder(tmp_path)  # nothing complete to lose: a new run may start


def test_an_interrupted_replacement_is_resumed_or_started_again_and_the_earlier_run_stays(tmp_path):
    run = finished_run(tmp_path / "run")
    checkpoint(run / INCOMING / "checkpoints", 3)  # a replacement killed after its first checkpoint
    with pytest.raises(
        ValueError, match=r"was replacing the run there and was interrupted \(.incoming\); the earlier run is intact"
    ):
        check_output_dir(run)
    assert check_output_dir(run, resume=True) == RunFolder(run, replacing=True)
    assert complete_replacement(run) is False  # it never finished: nothing moves
    folder = check_output_dir(run, overwrite=True)
    folder.begin()
    assert list((run / INCOMING).iterdir()) == [] and (run / "model" / "model.safetensors").read_bytes() == b"weights"


KILL_IN_SWAP = """
import os, signal, shutil, sys
from sbert_nonling.app.output_folder import complete_replacement
calls = {"count": 0}
def killing(original):
    def call(*args, **kwargs):
        calls["count"] += 1
        if calls["count"] == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    return call
os.replace, shutil.rmtree = killing(os.replace), killing(shutil.rmtree)
complete_replacement(sys.argv[1])
"""


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", range(1, 12))
def test_a_kill_during_the_swap_is_completed_by_the_next_run(tmp_path, kill_at):
    """A real process moving a finished replacement in is SIGKILLed before its n-th rename / delete; the next call
    (every run makes it first) leaves exactly the new run."""
    run = finished_run(tmp_path / "run")
    (run / "export").mkdir()
    (run / "stages").mkdir()
    expected = tree(new_run(run / INCOMING))
    killed = subprocess.run(
        [sys.executable, "-c", KILL_IN_SWAP, str(run), str(kill_at)], env=cli_environment(), capture_output=True
    )
    assert killed.returncode in (-signal.SIGKILL, 0), killed.stderr.decode()
    complete_replacement(run)
    assert {name: digest for name, digest in tree(run).items() if name not in ("notes.txt", "train.log")} == expected
    assert not any(path.name.startswith(".") for path in run.iterdir())


@pytest.mark.parametrize("recipe", ["simcse-unsup", "multitask", "pixel-linguist"])
def test_every_runner_refuses_before_writing_anything(tmp_path, recipe):
    run = finished_run(tmp_path / "run")
    before = tree(run)
    with pytest.raises(ValueError, match="already holds a finished run"):
        train_recipe(
            recipe,
            run,
            DataSources(text_file=tmp_path / "unread.txt", nli_file=tmp_path / "unread.csv", sts_dir=tmp_path),
            tiny=True,
        )
    assert tree(run) == before


def test_a_run_whose_final_save_was_interrupted_points_to_resume(tmp_path):
    checkpoint(tmp_path / "checkpoints", 8)
    (tmp_path / "model").mkdir()  # saved, but no results.json: the run stopped while finishing
    with pytest.raises(
        ValueError,
        match=r"interrupted run \(checkpoints/checkpoint-8\)\. Its saving was interrupted \(model written, "
        r"no results.json\)\. Pass --resume",
    ):
        check_output_dir(tmp_path)
    assert check_output_dir(tmp_path, resume=True) == RunFolder(tmp_path)


@pytest.fixture(scope="module")
def finished_cli_run(tmp_path_factory):
    """A real finished 2-step ``train simcse-unsup --tiny`` run (model, export, checkpoints, results, train.log)."""
    folder = tmp_path_factory.mktemp("finished")
    text_file = wiki_file(folder / "wiki.txt", 64)
    completed = subprocess.run(
        tiny_train_command(text_file, folder / "run", "--max-steps", "2"),
        env=cli_environment(),
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return folder / "run", text_file


def _copy_of(run, destination):
    subprocess.run(["cp", "-a", str(run), str(destination)], check=True)
    return destination


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["missing text file", "empty text file", "no --overwrite"])
def test_a_refused_run_leaves_the_finished_run_and_its_log_untouched(tmp_path, finished_cli_run, bad):
    run = _copy_of(finished_cli_run[0], tmp_path / "victim")
    before = tree(run)
    text_file = finished_cli_run[1] if bad == "no --overwrite" else tmp_path / "wiki.txt"
    if bad == "empty text file":
        text_file.write_text("")
    flags = ("--max-steps", "2") if bad == "no --overwrite" else ("--max-steps", "2", "--overwrite")
    completed = subprocess.run(
        tiny_train_command(text_file, run, *flags), env=cli_environment(), capture_output=True, text=True
    )
    assert completed.returncode == 2 and "Traceback" not in completed.stderr, completed.stderr[-2000:]
    assert tree(run) == before  # the model, export, checkpoints, results.json and train.log are as they were


@pytest.mark.slow
def test_a_replacement_killed_in_training_leaves_the_finished_run_then_resumes_into_its_place(
    tmp_path, finished_cli_run
):
    run = _copy_of(finished_cli_run[0], tmp_path / "victim")
    before = {name: digest for name, digest in tree(run).items() if name != "train.log"}
    steps = ("--max-steps", "40", "--set", "eval_steps=2")
    process = subprocess.Popen(
        tiny_train_command(finished_cli_run[1], run, *steps, "--overwrite"),
        env=cli_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while (
        not list((run / INCOMING).glob(f"checkpoints/checkpoint-*/{COMPLETE_MARKER}")) and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)  # a crash after the replacement's first checkpoint
    process.wait()
    assert {
        name: digest for name, digest in tree(run).items() if name != "train.log" and not name.startswith(INCOMING)
    } == before
    refused = subprocess.run(
        tiny_train_command(finished_cli_run[1], run, *steps), env=cli_environment(), capture_output=True, text=True
    )
    assert refused.returncode == 2 and "was interrupted" in refused.stderr
    resumed = subprocess.run(
        tiny_train_command(finished_cli_run[1], run, *steps, "--resume"),
        env=cli_environment(),
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    result = json.loads((run / "results.json").read_text())
    assert result["global_step"] == 40 and result["model"] == str(run / "model") and not (run / INCOMING).exists()
    assert (run / "checkpoints" / "checkpoint-40" / COMPLETE_MARKER).exists()


def test_an_unfinished_run_continues_by_what_its_folder_holds(tmp_path):
    from sbert_nonling.app.output_folder import continuation

    assert continuation(tmp_path / "missing") == "start"
    stopped_early = tmp_path / "stopped-early"  # a stop before the first checkpoint: the lock and the log alone
    stopped_early.mkdir()
    (stopped_early / ".run.lock").write_text("")
    (stopped_early / "train.log").write_text("started\n")
    checkpoint(stopped_early / "checkpoints", 2, complete=False)
    assert continuation(stopped_early) == "start"
    check_output_dir(stopped_early)  # what "start" runs: a plain run, no flag, is allowed there

    interrupted = tmp_path / "interrupted"
    checkpoint(interrupted / "checkpoints", 4)
    assert continuation(interrupted) == "resume"
    assert continuation(interrupted, resumable=False) == "restart"

    half_saved = tmp_path / "half-saved"  # saved models without results.json or a checkpoint
    (half_saved / "model").mkdir(parents=True)
    assert continuation(half_saved) == "restart"

    replacing = tmp_path / "replacing"
    checkpoint(replacing / INCOMING / "checkpoints", 2)
    assert continuation(replacing) == "resume"
    assert continuation(replacing, resumable=False) == "restart"
