"""A run's settings are in every checkpoint; --resume with other settings is refused listing them, unless a safe
change is allowed explicitly, which the record then keeps with both values."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from sbert_nonling.cli import main
from sbert_nonling.training.checkpoints import COMPLETE_MARKER, write_complete_marker
from sbert_nonling.training.run_settings import RUN_SETTINGS_FILE, safe_to_change
from tests.conftest import cli_environment, tiny_train_command, wiki_file


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, data_dir):
    """A simcse-unsup run stopped by a real SIGTERM after its checkpoint-2 (learning rate 1e-4, eval every 2 steps)."""
    root = tmp_path_factory.mktemp("settings")
    text_file = wiki_file(root / "wiki.txt", 2000)
    run = root / "run"
    command = tiny_train_command(
        text_file, run, "--set", "learning_rate=1e-4", "--set", "eval_steps=2", "--max-steps", "6"
    )
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=cli_environment())
    deadline = time.monotonic() + 300
    while not (run / "checkpoints" / "checkpoint-2" / COMPLETE_MARKER).is_file():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-3000:]
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, error = process.communicate(timeout=300)
    assert process.returncode == 143, error[-3000:]
    return run, command[3:]  # the CLI arguments, without the interpreter and module


def test_every_checkpoint_records_the_settings(interrupted):
    run, _ = interrupted
    for checkpoint in (run / "checkpoints").iterdir():
        recorded = json.loads((checkpoint / RUN_SETTINGS_FILE).read_text())
        assert recorded["settings"]["learning_rate"] == 1e-4 and recorded["settings"]["eval_steps"] == 2
        assert RUN_SETTINGS_FILE in json.loads((checkpoint / COMPLETE_MARKER).read_text())["files"]


@pytest.mark.parametrize(
    ("changed", "listed"),
    [
        (["--set", "learning_rate=0.001"], "learning_rate: 0.0001 in the run, 0.001 now"),
        (
            ["--set", "seed=7", "--set", "text_loss.temperature=0.1"],
            "seed: 42 in the run, 7 now; text_loss.temperature: 0.05 in the run, 0.1 now",
        ),
        (["--set", "pooling=cls"], "pooling: 'mean' in the run, 'cls' now"),
        (["--set", "batch_size=16"], "batch_size: 8 in the run, 16 now"),
    ],
)
def test_resume_with_other_settings_is_refused_listing_them(interrupted, capsys, changed, listed):
    run, argv = interrupted
    before = sorted(path.name for path in (run / "checkpoints").iterdir())
    assert main([*argv, *changed, "--resume"]) == 2
    error = capsys.readouterr().err
    assert "--resume with other settings than the run" in error and listed in error and "--overwrite" in error
    assert (
        sorted(path.name for path in (run / "checkpoints").iterdir()) == before and not (run / "results.json").exists()
    )


def test_resume_with_another_recipe_is_refused_before_a_size_mismatch(interrupted, capsys):
    _, argv = interrupted
    other = [argv[0], "simcse-sup", *argv[2:]]
    assert main([*other, "--resume"]) == 2
    error = capsys.readouterr().err
    assert "'simcse-unsup' in the run, 'simcse-sup' now" in error and "RuntimeError" not in error


def test_resume_from_a_checkpoint_without_settings_is_refused(interrupted, tmp_path, capsys):
    import shutil

    run, argv = interrupted
    copy = shutil.copytree(run, tmp_path / "run")
    for checkpoint in (copy / "checkpoints").iterdir():  # intact checkpoints of a trainer that recorded no settings
        (checkpoint / RUN_SETTINGS_FILE).unlink()
        write_complete_marker(checkpoint, int(checkpoint.name.split("-")[1]))
    argv = [str(copy) if argument == str(run) else argument for argument in argv]
    assert main([*argv, "--resume"]) == 2
    error = capsys.readouterr().err
    assert f"holds no {RUN_SETTINGS_FILE}" in error and "--overwrite" in error
    assert not (copy / "results.json").exists()


def test_only_safe_settings_may_change_and_the_record_keeps_both(interrupted, capsys):
    run, argv = interrupted
    assert main([*argv, "--set", "learning_rate=0.001", "--allow-changed", "learning_rate", "--resume"]) == 2
    assert (
        "--allow-changed learning_rate: only settings that do not change what is computed" in capsys.readouterr().err
    )
    assert main([*argv, "--set", "eval_steps=3", "--resume"]) == 2
    assert "Pass --allow-changed eval_steps to accept that" in capsys.readouterr().err
    assert main([*argv, "--set", "eval_steps=3", "--allow-changed", "eval_steps", "--resume"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["global_step"] == 6
    assert result["settings_changed_on_resume"][0]["changed"] == {"eval_steps": [2, 3]}
    assert (
        json.loads((run / "results.json").read_text())["settings_changed_on_resume"]
        == result["settings_changed_on_resume"]
    )
    assert json.loads((run / "recipe.json").read_text())["eval_steps"] == 3
    final = json.loads((run / "checkpoints" / "checkpoint-6" / RUN_SETTINGS_FILE).read_text())
    assert final["settings"]["eval_steps"] == 3 and final["changes"] == result["settings_changed_on_resume"]


def test_which_settings_are_safe_to_change():
    assert safe_to_change("eval_steps") and safe_to_change("dataloader_num_workers")
    assert not any(
        safe_to_change(key) for key in ("learning_rate", "batch_size", "seed", "temperature", "pooling", "method")
    )


def test_a_resume_point_is_the_newest_intact_checkpoint_checked_or_none(tmp_path):
    from sbert_nonling.training.run_settings import check_resume_point

    assert check_resume_point(tmp_path / "checkpoints", {"learning_rate": 1e-5}) == []  # nothing to resume: it starts
    checkpoint = tmp_path / "checkpoints" / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    (checkpoint / RUN_SETTINGS_FILE).write_text(json.dumps({"settings": {"learning_rate": 1e-5}, "changes": []}))
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    write_complete_marker(checkpoint, 2)
    with pytest.raises(ValueError, match=r"learning_rate: 1e-05 in the run, 0.001 now"):
        check_resume_point(tmp_path / "checkpoints", {"learning_rate": 1e-3})
