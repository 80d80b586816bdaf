"""One writer per run folder: a second run is refused naming the holder; a dead holder's lock never blocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sbert_nonling.app.run_lock import LOCK_FILE, run_lock
from tests.conftest import cli_environment, tiny_train_command, wiki_file

ROOT = Path(__file__).resolve().parents[2]
HOLD = (
    "import sys, time; from sbert_nonling.app.run_lock import run_lock\n"
    "with run_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(600)"
)


def _train(run: Path, text_file: Path, *extra: str) -> subprocess.Popen:
    command = tiny_train_command(text_file, run, *extra)
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_environment(), cwd=ROOT
    )


def test_a_second_holder_is_refused_naming_the_first_and_the_lock_is_released_on_exit(tmp_path):
    with run_lock(tmp_path):
        other = subprocess.run(
            [sys.executable, "-c", HOLD, str(tmp_path)],
            capture_output=True,
            text=True,
            env=cli_environment(),
            timeout=120,
            check=False,
        )
        assert other.returncode == 1 and "held" not in other.stdout
        assert (
            f"is in use by another run (process {os.getpid()} on " in other.stderr
            and "choose another --output" in other.stderr
        )
    with pytest.raises(RuntimeError), run_lock(tmp_path):
        raise RuntimeError("the run failed")
    with run_lock(tmp_path):  # released on both exit paths
        pass


@pytest.mark.slow  # two training processes
def test_two_train_commands_on_one_output_and_a_killed_holder(tmp_path, data_dir):
    text_file = wiki_file(tmp_path / "wiki.txt", 2000)
    run = tmp_path / "run"
    first = _train(run, text_file, "--set", "seed=1", "--set", "eval_steps=10000", "--max-steps", "100000")
    deadline = time.monotonic() + 300
    while not (run / LOCK_FILE).is_file() or not (run / LOCK_FILE).read_text():  # the first run holds the folder
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[1][-3000:]
        time.sleep(0.2)
    assert json.loads((run / LOCK_FILE).read_text())["pid"] == first.pid
    second = _train(run, text_file, "--set", "seed=2", "--max-steps", "2")
    _, error = second.communicate(timeout=300)
    assert (
        second.returncode == 2 and f"is in use by another run (process {first.pid} on" in error and "seed=1" in error
    )
    assert first.poll() is None  # the first run goes on
    first.send_signal(signal.SIGKILL)  # dies holding the lock
    first.communicate(timeout=60)
    third = _train(run, text_file, "--set", "seed=2", "--max-steps", "2", "--overwrite")
    _, error = third.communicate(timeout=300)
    assert third.returncode == 0, error[-3000:]
    assert json.loads((run / "recipe.json").read_text())["seed"] == 2
