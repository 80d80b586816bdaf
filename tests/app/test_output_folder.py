"""A run folder holding a finished or interrupted run is never replaced without overwrite; resume needs a checkpoint."""

from __future__ import annotations

import pytest

from sbert_nonling.app import train_recipe
from sbert_nonling.app.output_folder import RUN_ENTRIES, prepare_output_dir
from sbert_nonling.data import DataSources
from sbert_nonling.training.checkpoints import COMPLETE_MARKER, write_complete_marker


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


def test_a_new_or_empty_folder_is_used_as_it_is(tmp_path):
    assert prepare_output_dir(tmp_path / "new") == tmp_path / "new"
    assert prepare_output_dir(tmp_path) == tmp_path


def test_a_finished_run_is_refused_and_left_untouched(tmp_path):
    run = finished_run(tmp_path / "run")
    before = sorted(path.relative_to(run) for path in run.rglob("*"))
    with pytest.raises(ValueError, match=r"already holds a finished run \(results.json, model\).*--overwrite.*--resume continues"):
        prepare_output_dir(run)
    with pytest.raises(ValueError, match=r"holds a finished run \(results.json\): there is nothing to resume"):
        prepare_output_dir(run, resume=True)
    with pytest.raises(ValueError, match="either resume .* or overwrite"):
        prepare_output_dir(run, resume=True, overwrite=True)
    assert sorted(path.relative_to(run) for path in run.rglob("*")) == before


def test_overwrite_deletes_the_run_and_nothing_else(tmp_path):
    run = finished_run(tmp_path / "run")
    (run / "tiny-encoder").mkdir()
    prepare_output_dir(run, overwrite=True)
    assert sorted(path.name for path in run.iterdir()) == ["notes.txt", "train.log"]
    assert not any((run / name).exists() for name in RUN_ENTRIES)


@pytest.mark.parametrize("checkpoints", ["checkpoints", "stages/contrastive/checkpoints"])
def test_an_interrupted_run_needs_resume_or_overwrite(tmp_path, checkpoints):
    checkpoint(tmp_path / checkpoints, 4)
    with pytest.raises(ValueError, match=rf"checkpoints of an interrupted run \({checkpoints}/checkpoint-4\).*--resume"):
        prepare_output_dir(tmp_path)
    assert prepare_output_dir(tmp_path, resume=True) == tmp_path
    with pytest.raises(ValueError, match="This recipe does not resume: pass --overwrite"):
        prepare_output_dir(tmp_path, resumable=False)


def test_resume_without_a_complete_checkpoint_says_so(tmp_path):
    with pytest.raises(ValueError, match="holds no complete checkpoint to resume from. Run without --resume"):
        prepare_output_dir(tmp_path, resume=True)
    checkpoint(tmp_path / "checkpoints", 2, complete=False)  # killed while writing its first checkpoint
    with pytest.raises(ValueError, match="holds no complete checkpoint"):
        prepare_output_dir(tmp_path, resume=True)
    assert prepare_output_dir(tmp_path) == tmp_path  # nothing complete to lose: a new run may start
    assert not (tmp_path / "checkpoints" / "checkpoint-2" / COMPLETE_MARKER).exists()


@pytest.mark.parametrize("recipe", ["simcse-unsup", "multitask", "pixel-linguist"])
def test_every_runner_refuses_before_writing_anything(tmp_path, recipe):
    run = finished_run(tmp_path / "run")
    with pytest.raises(ValueError, match="already holds a finished run"):
        train_recipe(recipe, run, DataSources(text_file=tmp_path / "unread.txt", nli_file=tmp_path / "unread.csv", sts_dir=tmp_path), tiny=True)
    assert not (run / "tiny-encoder").exists() and (run / "model" / "model.safetensors").read_bytes() == b"weights"


def test_a_run_whose_final_save_was_interrupted_points_to_resume(tmp_path):
    checkpoint(tmp_path / "checkpoints", 8)
    (tmp_path / "model").mkdir()  # saved, but no results.json: the run stopped while finishing
    with pytest.raises(
        ValueError,
        match=r"interrupted run \(checkpoints/checkpoint-8\)\. Its saving was interrupted \(model written, no results.json\)\. Pass --resume",
    ):
        prepare_output_dir(tmp_path)
    assert prepare_output_dir(tmp_path, resume=True) == tmp_path
