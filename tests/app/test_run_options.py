"""RunOptions: one frozen object for the run flags that train, reproduce and the runner share; each field is its own
command-line flag, and the flags given come back as the object."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from sbert_nonling.app.run_options import RunOptions
from sbert_nonling.cli import RUN_OPTION_NAMES, _run_options, build_parser


def test_nothing_is_relaxed_or_replaced_by_default_and_the_options_cannot_change_during_a_run():
    options = RunOptions()
    assert dataclasses.asdict(options) == {
        "resume": False,
        "overwrite": False,
        "allow_changed": (),
        "dry_run": False,
        "allow_unused_datasets": False,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.resume = True  # type: ignore[misc]


def test_every_field_is_a_flag_with_one_line_of_help_that_train_offers():
    flags = [item.metadata["flag"] for item in dataclasses.fields(RunOptions)]
    assert len(set(flags)) == len(flags) and all(flag.startswith("--") for flag in flags)
    assert all(item.metadata["help"] and "\n" not in item.metadata["help"] for item in dataclasses.fields(RunOptions))
    assert set(RUN_OPTION_NAMES["train"]) == {item.name for item in dataclasses.fields(RunOptions)}
    assert set(RUN_OPTION_NAMES["reproduce"]) < set(RUN_OPTION_NAMES["train"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "simcse-unsup"], RunOptions()),
        (
            ["train", "simcse-unsup", "--resume", "--allow-changed", "eval_steps", "--allow-changed", "description"],
            RunOptions(resume=True, allow_changed=("eval_steps", "description")),
        ),
        (["train", "simcse-unsup", "--overwrite", "--dry-run"], RunOptions(overwrite=True, dry_run=True)),
        (
            ["reproduce", "simcse-unsup", "--resume", "--allow-unused-datasets"],
            RunOptions(resume=True, allow_unused_datasets=True),
        ),
    ],
)
def test_the_flags_given_come_back_as_the_options(argv, expected, tmp_path):
    assert _run_options(build_parser().parse_args([*argv, "--output", str(tmp_path)])) == expected


def test_reproduce_offers_no_flag_of_a_single_run(tmp_path, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reproduce", "simcse-unsup", "--output", str(tmp_path), "--dry-run"])
    assert "unrecognized arguments: --dry-run" in capsys.readouterr().err


def test_importing_the_options_loads_no_torch():
    code = "import sys, sbert_nonling.app.run_options; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
