"""reproduce: seeds x grid of real tiny runs, selection on STS-B dev, the 7 STS test sets' mean +- sd beside the
paper's values, rows off the paper's setting marked, resume after a stop at any moment (changed settings refused), and
bad input refused before any training step."""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time

import pytest

from sbert_nonling.app import RunOptions
from sbert_nonling.app.recipes import paper_result
from sbert_nonling.app.reproduce import SeedRun, format_table, mean_and_sd, reproduce, summarise
from sbert_nonling.data import DataSources
from sbert_nonling.evaluation.sts_data import STS_TASKS
from tests.conftest import cli_environment, wiki_file


def run(recipe, cell, seed, dev, avg):
    return SeedRun(recipe, cell, seed, f"runs/{seed}", dev, {**{task: avg for task in STS_TASKS}, "avg": avg})


def test_the_cell_with_the_best_mean_dev_is_summarised_with_the_sample_sd_beside_the_paper():
    runs = [
        run("simcse-unsup", "lr1e-05", 42, 70.0, 60.0),
        run("simcse-unsup", "lr1e-05", 43, 71.0, 62.0),
        run("simcse-unsup", "lr3e-05", 42, 75.0, 50.0),
        run("simcse-unsup", "lr3e-05", 43, 65.0, 54.0),
    ]
    selected = {"simcse-unsup": "lr1e-05"}  # mean dev 70.5 against 70.0
    summary = summarise(runs, selected)
    assert summary["simcse-unsup"]["avg"] == pytest.approx([61.0, statistics.stdev([60.0, 62.0])])
    assert summary["simcse-unsup"]["dev"] == pytest.approx([70.5, statistics.stdev([70.0, 71.0])])
    table = format_table(summary, runs, selected, {"simcse-unsup": paper_result("simcse-unsup")})
    assert "| simcse-unsup (lr1e-05, 2 seeds) | 61.00 ± 1.41 |" in table
    assert "| simcse-unsup, paper | 68.40 | 82.41 | 74.38 | 80.91 | 78.56 | 76.85 | 72.23 | 76.25 |" in table
    assert "Gao et al. 2021, SimCSE (EMNLP), Table 5" in table
    assert mean_and_sd([3.0]) == (3.0, 0.0)


@pytest.mark.slow
def test_a_tiny_reproduction_of_simcse_and_visualcse_prints_mean_and_sd_beside_the_paper(
    sts_test_dir, data_dir, tmp_path
):
    text = wiki_file(tmp_path / "wiki.txt", 200)
    output = tmp_path / "table"
    command = [
        sys.executable,
        "-m",
        "sbert_nonling.cli",
        "reproduce",
        "simcse-unsup",
        "visualcse",
        "--seeds",
        "2",
        "--tiny",
        "--max-steps",
        "4",
        "--text-file",
        str(text),
        "--image-dir",
        str(data_dir / "images" / "cifar10" / "train"),
        "--sts-dir",
        str(sts_test_dir),
        "--output",
        str(output),
        "--set",
        "batch_size=8",
        "--set",
        "eval_steps=2",
    ]
    finished = subprocess.run(command, env=cli_environment(), capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr
    report = json.loads((output / "reproduce.json").read_text(encoding="utf-8"))
    assert len(report["runs"]) == 4 and (output / "reproduce_seeds.png").is_file()
    for recipe, paper in (("simcse-unsup", "76.25"), ("visualcse", "77.50")):
        runs = [entry for entry in report["runs"] if entry["recipe"] == recipe]
        assert [entry["seed"] for entry in runs] == [42, 43]
        assert all(set(entry["test"]) == {*STS_TASKS, "avg"} for entry in runs)
        mean, sd = mean_and_sd([entry["test"]["avg"] for entry in runs])
        assert f"| {recipe} (recipe, 2 seeds) * |" in finished.stdout
        assert f"{mean:.2f} ± {sd:.2f} |\n" in finished.stdout
        assert f"| {recipe}, paper |" in finished.stdout and f"| {paper} |" in finished.stdout
    assert (output / "reproduce.md").read_text(encoding="utf-8") == report["table"]

    records = sorted(output.glob("*/recipe/seed-*/results.json"))
    before = [path.stat().st_mtime_ns for path in records]
    data = DataSources(text_file=str(text), sts_dir=str(sts_test_dir))
    overrides = {"batch_size": 8, "eval_steps": 2}
    again = reproduce(
        ["simcse-unsup"],
        output,
        data,
        seeds=2,
        tiny=True,
        max_steps=4,
        overrides=overrides,
        options=RunOptions(resume=True),
    )
    assert [path.stat().st_mtime_ns for path in records] == before  # no run trained again
    simcse = [entry for entry in report["runs"] if entry["recipe"] == "simcse-unsup"]
    assert [entry["test"] for entry in again["runs"]] == [entry["test"] for entry in simcse]


@pytest.mark.slow
def test_the_clip_teacher_recipes_reproduce_beside_their_reported_averages(sts_test_dir, flickr_subset, tmp_path):
    data = DataSources(
        text_file=str(wiki_file(tmp_path / "wiki.txt", 64)),
        captions_file=str(flickr_subset / "captions.txt"),
        image_dir=str(flickr_subset / "images"),
        sts_dir=str(sts_test_dir),
    )
    overrides = {"batch_size": 8, "eval_steps": 2}
    report = reproduce(
        ["kdmcse", "dalr"], tmp_path / "table", data, seeds=2, tiny=True, max_steps=4, overrides=overrides
    )
    assert [(entry["recipe"], entry["seed"]) for entry in report["runs"]] == [
        ("kdmcse", 42),
        ("kdmcse", 43),
        ("dalr", 42),
        ("dalr", 43),
    ]
    for recipe, paper in (("kdmcse", "78.60"), ("dalr", "79.50")):
        assert f"| {recipe} (recipe, 2 seeds) * |" in report["table"] and f"| {recipe}, paper |" in report["table"]
        assert paper in report["table"].split(f"| {recipe}, paper |")[1].splitlines()[0]


def test_bad_input_is_refused_in_one_sentence_before_any_training_step(sts_test_dir, tmp_path):
    text = wiki_file(tmp_path / "wiki.txt", 20)
    incomplete = tmp_path / "incomplete"
    (incomplete / "STSBenchmark").mkdir(parents=True)
    for name in ("sts-dev.csv", "sts-test.csv"):
        (incomplete / "STSBenchmark" / name).write_bytes((sts_test_dir / "STSBenchmark" / name).read_bytes())
    output = tmp_path / "out"
    with pytest.raises(ValueError, match=r"lacks the test set of STS12, STS13, STS14, STS15, STS16, SICK-R"):
        reproduce(["simcse-unsup"], output, DataSources(text_file=str(text), sts_dir=str(incomplete)), tiny=True)
    with pytest.raises(ValueError, match="pass sts_dir"):
        reproduce(["simcse-unsup"], output, DataSources(text_file=str(text)), tiny=True)
    data = DataSources(text_file=str(text), sts_dir=str(sts_test_dir))
    with pytest.raises(ValueError, match="Recipe 'multitask' trains in stages"):
        reproduce(["multitask"], output, data, learning_rates=[1e-5], tiny=True)
    assert not output.exists()
    (output / "simcse-unsup").mkdir(parents=True)
    with pytest.raises(ValueError, match="already holds a reproduction: pass --resume"):
        reproduce(["simcse-unsup"], output, data, tiny=True)
    refused = subprocess.run(
        [sys.executable, "-m", "sbert_nonling.cli", "reproduce", "simcse-unsup", "--seeds", "0", "--output", "x"],
        env=cli_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        == "sbert-nonling reproduce: error: --seeds and --max-steps must be at least 1, got 0 and None."
    )


def test_a_stop_between_runs_continues_with_resume_and_changed_settings_are_refused(sts_test_dir, tmp_path):
    """The state a stop leaves between two runs (the next run's folder holding only its lock and log) continues with
    --resume without training the finished run again; a resume with other settings is refused before any step."""
    data = DataSources(text_file=str(wiki_file(tmp_path / "wiki.txt", 64)), sts_dir=str(sts_test_dir))
    output = tmp_path / "table"
    overrides = {"batch_size": 8, "eval_steps": 2}
    reproduce(["simcse-unsup"], output, data, seeds=1, tiny=True, max_steps=2, overrides=overrides)
    finished = output / "simcse-unsup" / "recipe" / "seed-42" / "results.json"
    before = finished.stat().st_mtime_ns
    stopped = output / "simcse-unsup" / "recipe" / "seed-43"
    stopped.mkdir()
    (stopped / ".run.lock").write_text("")
    (stopped / "train.log").write_text("")
    with pytest.raises(ValueError, match="already holds a reproduction: pass --resume"):
        reproduce(["simcse-unsup"], output, data, seeds=2, tiny=True, max_steps=2, overrides=overrides)
    with pytest.raises(ValueError) as refused:
        reproduce(
            ["simcse-unsup"],
            output,
            data,
            seeds=2,
            tiny=True,
            max_steps=3,
            overrides=overrides,
            options=RunOptions(resume=True),
        )
    assert str(refused.value).startswith(
        f"--resume with other settings than the finished run in {finished.parent} was trained with (max_steps: 2 in "
        "the run, 3 now)."
    )
    assert not (stopped / "results.json").exists() and finished.stat().st_mtime_ns == before

    lines: list[str] = []
    report = reproduce(
        ["simcse-unsup"],
        output,
        data,
        seeds=2,
        tiny=True,
        max_steps=2,
        overrides=overrides,
        options=RunOptions(resume=True),
        progress=lines.append,
    )
    assert finished.stat().st_mtime_ns == before and (stopped / "results.json").is_file()
    assert lines[0] == "run 1/2: simcse-unsup recipe seed 42: finished earlier, reused; 2 steps, STS-B dev " + (
        f"{report['runs'][0]['dev']:.2f}"
    )
    assert lines[1].startswith("run 2/2: simcse-unsup recipe seed 43: trained in ")
    assert [line.split(":")[0] for line in lines[2:]] == ["test sets 1/2", "test sets 2/2"]
    for entry in report["runs"]:
        assert (entry["encoder"], entry["tiny"], entry["steps"]) == ("tiny random encoder", True, 2)
        assert entry["departures"] == [
            "tiny random encoder (--tiny)",
            "at most 2 steps per run (--max-steps)",
            "batch_size=8 (--set)",
            "eval_steps=2 (--set)",
        ]
    assert "| simcse-unsup (recipe, 2 seeds) * |" in report["table"]
    assert (
        "\\* Not the paper's setting, so not comparable with its values:\n- simcse-unsup: at most 2 steps per run "
        "(--max-steps); batch_size=8 (--set); eval_steps=2 (--set); tiny random encoder (--tiny); encoder tiny random "
        "encoder; 2 optimizer steps\n" in report["table"]
    )


@pytest.mark.slow
def test_a_reproduction_stopped_by_sigterm_at_any_moment_finishes_with_resume(sts_test_dir, tmp_path):
    """A real SIGTERM to the command while its second run starts (the moment that deadlocked: the run's folder held
    only its lock): one sentence, exit 143, and --resume finishes without training the first run again."""
    text = wiki_file(tmp_path / "wiki.txt", 64)
    output = tmp_path / "table"
    command = [sys.executable, "-m", "sbert_nonling.cli", "reproduce", "simcse-unsup", "--seeds", "2", "--tiny"]
    command += ["--max-steps", "2", "--text-file", str(text), "--sts-dir", str(sts_test_dir), "--output", str(output)]
    command += ["--set", "batch_size=8", "--set", "eval_steps=2"]
    process = subprocess.Popen(
        command, env=cli_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    second = output / "simcse-unsup" / "recipe" / "seed-43" / ".run.lock"
    deadline = time.monotonic() + 600
    while not second.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 143, stderr
    assert "run 1/2: simcse-unsup recipe seed 42: trained in" in stdout
    (message,) = [line for line in stderr.splitlines() if "SIGTERM" in line]
    assert "--resume" in message
    finished = output / "simcse-unsup" / "recipe" / "seed-42" / "results.json"
    before = finished.stat().st_mtime_ns
    resumed = subprocess.run(
        [*command, "--resume"], env=cli_environment(), capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "run 1/2: simcse-unsup recipe seed 42: finished earlier, reused" in resumed.stdout
    assert finished.stat().st_mtime_ns == before
    assert len(json.loads((output / "reproduce.json").read_text(encoding="utf-8"))["runs"]) == 2
