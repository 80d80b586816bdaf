"""experiments/: the grid's bookkeeping (learning-rate choice, skipping finished rows), the report's tables and
verdicts, and one committed row re-run from its command to the same STS-B dev score."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))

import report  # noqa: E402
import run_grid  # noqa: E402
from methods import LEARNING_RATES, METHODS, SEEDS, grid_methods, method_overrides  # noqa: E402


def row(method, seed, learning_rate, dev, backbone="random", steps=100):
    return {
        "method": method,
        "backbone": backbone,
        "seed": seed,
        "learning_rate": learning_rate,
        "dev_start": 50.0,
        "dev_selected": dev,
        "steps": steps,
        "dev_curve": [[50, dev - 1], [100, dev]],
        "train_seconds": 10.0,
        "wall_seconds": 12.0,
        "steps_per_second": 10.0,
        "modality_share": 0.3,
        "best_step": 100,
        "command": (
            f"python experiments/run_one.py --method {method} --backbone {backbone} --seed {seed} "
            f"--learning-rate {learning_rate:g}"
        ),
    }


def write_rows(path, rows):
    path.write_text("".join(json.dumps(entry) + "\n" for entry in rows), encoding="utf-8")


def test_every_method_overrides_only_settings_its_recipe_has():
    from sbert_nonling.app.recipes import get_recipe

    for backbone in LEARNING_RATES:
        for method in grid_methods(backbone):
            get_recipe(
                METHODS[method]["recipe"], overrides=method_overrides(method, backbone, LEARNING_RATES[backbone][0])
            )
    assert "pixel" not in grid_methods("minilm") and len(grid_methods("random")) == 11


def test_the_image_lr0_control_differs_from_visualcse_in_the_image_rate_only():
    for backbone in LEARNING_RATES:
        treated, control = (
            method_overrides(method, backbone, 3e-5) for method in ("visualcse-supcon", "visualcse-image-lr0")
        )
        assert control == {**treated, "modality_learning_rate": 0.0} and treated["modality_learning_rate"] > 0
    rows = [row("visualcse-supcon", 0, 1e-4, 57.0), row("visualcse-supcon", 0, 3e-4, 56.0)]
    assert run_grid.search_rates(rows, "random", "visualcse-image-lr0") == (1e-4,)
    assert run_grid.search_rates(rows, "random", "visualcse-supcon") == LEARNING_RATES["random"]
    with pytest.raises(ValueError, match="learning-rate search"):
        run_grid.search_rates([], "random", "visualcse-image-lr0")


def test_the_audio_lr0_control_and_the_speed_variants_reuse_the_treated_methods_text_rate():
    from sbert_nonling.app.recipes import get_recipe

    for backbone in LEARNING_RATES:
        audio, audio_control = (
            method_overrides(method, backbone, 3e-5) for method in ("audiocse", "audiocse-audio-lr0")
        )
        assert audio_control == {**audio, "modality_learning_rate": 0.0} and audio["modality_learning_rate"] > 0
        treated, keep50, fast = (
            method_overrides(method, backbone, 3e-5)
            for method in ("visualcse-supcon", "visualcse-keep50", "visualcse-fast")
        )
        assert keep50 == {**treated, "token_keep_ratio": 0.5} and fast == {**treated, "img_size": 32}
        fast_settings = get_recipe(METHODS["visualcse-fast"]["recipe"], overrides=fast)
        treated_settings = get_recipe(METHODS["visualcse-supcon"]["recipe"], overrides=treated)
        assert (
            fast_settings["token_keep_ratio"],
            treated_settings["token_keep_ratio"],
            treated_settings["img_size"],
        ) == (0.25, 1.0, 64)
    rows = [
        row("visualcse-supcon", 0, 1e-4, 56.0),
        row("visualcse-supcon", 0, 3e-4, 57.0),
        row("audiocse", 0, 1e-4, 57.0),
    ]
    assert run_grid.search_rates(rows, "random", "visualcse-fast") == (3e-4,)
    assert run_grid.search_rates(rows, "random", "visualcse-keep50") == (3e-4,)
    assert run_grid.search_rates(rows, "random", "audiocse-audio-lr0") == (1e-4,)


def test_best_learning_rate_is_chosen_on_seed_0_dev_only():
    rows = [row("simcse", 0, 1e-4, 57.0), row("simcse", 0, 3e-4, 58.0), row("simcse", 1, 1e-4, 99.0)]
    assert run_grid.best_learning_rate(rows, "random", "simcse") == 3e-4
    with pytest.raises(ValueError, match="learning-rate search"):
        run_grid.best_learning_rate(rows, "random", "mcse")


def test_grid_skips_rows_already_in_the_results_file(tmp_path):
    results = tmp_path / "random.jsonl"
    done = [row("simcse", 0, rate, 57.0 + index) for index, rate in enumerate(LEARNING_RATES["random"])]
    done += [row("simcse", seed, LEARNING_RATES["random"][-1], 58.0) for seed in SEEDS[1:]]
    write_rows(results, done)
    argv = [
        sys.executable,
        str(EXPERIMENTS / "run_grid.py"),
        "--backbone",
        "random",
        "--methods",
        "simcse",
        "--results",
        str(results),
        "--work-dir",
        str(tmp_path / "work"),
    ]
    subprocess.run(argv, check=True, timeout=60)
    assert len(run_grid.read_rows(results)) == len(done) and not (tmp_path / "work").exists()


def test_verdict_needs_the_intervals_apart():
    assert report.verdict(60.0, 0.5, 58.0, 0.5) == "better"
    assert report.verdict(58.6, 0.5, 58.0, 0.5) == "within noise"
    assert report.verdict(56.0, 0.5, 58.0, 0.5) == "worse"


def test_report_rewrites_only_the_table_section_and_draws_the_curves(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    rows = [
        row("simcse", 0, 1e-4, 57.0),
        row("simcse", 0, 3e-4, 58.0),
        row("simcse", 1, 3e-4, 58.4),
        row("simcse", 2, 3e-4, 57.6),
    ]
    rows += [
        row("mcse", 0, 1e-4, 60.0),
        row("mcse", 0, 3e-4, 59.0),
        row("mcse", 1, 1e-4, 60.2),
        row("mcse", 2, 1e-4, 59.8),
    ]
    write_rows(results / "random.jsonl", rows)
    doc = tmp_path / "results.md"
    doc.write_text(f"# Results\n\nprose\n\n{report.START}\nold\n{report.END}\n\nmore prose\n", encoding="utf-8")
    argv = [
        sys.executable,
        str(EXPERIMENTS / "report.py"),
        "--results",
        str(results),
        "--doc",
        str(doc),
        "--plot",
        str(tmp_path / "curves.png"),
    ]
    subprocess.run(argv, check=True, timeout=120)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Results\n\nprose") and text.endswith("more prose\n") and "old" not in text
    assert "| SimCSE-unsup (baseline) | 0.0003 | 3 | 58.00 +- 0.40 |" in text
    assert "| MCSE | 0.0001 | 3 | 60.00 +- 0.20 | 50.00 | +2.00 | better |" in text
    assert text.count("--shared ../shared --results rerun.jsonl`") == len(rows)
    assert (tmp_path / "curves.png").stat().st_size > 10_000


def test_a_committed_row_reproduces_from_its_command(tmp_path, data_dir):
    committed = run_grid.read_rows(EXPERIMENTS / "results" / "random.jsonl")
    target = next(entry for entry in committed if entry["method"] == "simcse" and entry["seed"] == SEEDS[0])
    results = tmp_path / "rerun.jsonl"
    command = target["command"].split()[1:] + [
        "--shared",
        str(data_dir.parent),
        "--work-dir",
        str(tmp_path / "work"),
        "--results",
        str(results),
    ]
    subprocess.run([sys.executable, *command], check=True, timeout=600, cwd=EXPERIMENTS.parent)
    rerun = run_grid.read_rows(results)[0]
    # fp32 on the same CPU capability runs the same kernels; another capability (AVX2 vs AVX-512) rounds differently.
    same_kernels = rerun["cpu_capability"] == target["cpu_capability"]
    assert rerun["dev_start"] == pytest.approx(target["dev_start"], abs=1e-6 if same_kernels else 0.05)
    assert rerun["dev_selected"] == pytest.approx(target["dev_selected"], abs=0.05 if same_kernels else 0.5)
    assert rerun["dev_curve"][-1][0] == target["dev_curve"][-1][0]


def test_no_verdict_before_every_seed_has_run(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    rows = [row("simcse", seed, 1e-4, 58.0 + seed / 10) for seed in SEEDS] + [row("simcse", 0, 3e-4, 57.0)]
    rows += [row("mcse", 0, 1e-4, 65.0), row("mcse", 0, 3e-4, 64.0)]
    write_rows(results / "random.jsonl", rows)
    text = report.backbone_tables(run_grid.read_rows(results / "random.jsonl"), "random")
    assert (
        f"| MCSE | 0.0001 | 1 | 65.00 +- 0.00 | 50.00 | +6.90 | pending (1 of {len(SEEDS)} seeds run; SimCSE 3) |"
        in text
    )
