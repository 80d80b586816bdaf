from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest

from sbert_nonling.cli import main
from tests.conftest import cli_environment, tiny_train_argv, wiki_file


@pytest.fixture(autouse=True)
def _restore_library_output():
    """main() quiets transformers, huggingface_hub and datasets process-wide, as a CLI should; the tests after these
    get the libraries' defaults back."""
    import datasets
    import huggingface_hub.utils
    import transformers.utils.logging

    states = (
        transformers.utils.logging.get_verbosity(),
        datasets.logging.get_verbosity(),
        datasets.is_progress_bar_enabled(),
        transformers.utils.logging.is_progress_bar_enabled(),
        huggingface_hub.utils.are_progress_bars_disabled(),
    )
    yield
    transformers.utils.logging.set_verbosity(states[0])
    datasets.logging.set_verbosity(states[1])
    if states[2]:
        datasets.enable_progress_bars()
    if states[3]:
        transformers.utils.logging.enable_progress_bar()
    if not states[4]:
        huggingface_hub.utils.enable_progress_bars()


@pytest.fixture
def exported_tiny(tiny_model, tmp_path):
    from sbert_nonling import export_text_model

    tiny_model.save(str(tmp_path / "full"))
    return export_text_model(tiny_model, tmp_path / "export")


def test_eval_prints_the_table_and_a_json_last_line(exported_tiny, small_sts_dir, capsys):
    assert main(["eval", str(exported_tiny), "--sts-dir", str(small_sts_dir), "--split", "dev", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    scores = json.loads(lines[-1])
    assert set(scores) == {"STSBenchmark", "SICK-R", "avg"}
    assert "STSBenchmark" in lines[0] and "Avg" in lines[0]


def test_a_command_run_in_process_leaves_the_caller_s_logging_and_warnings_as_they_were(
    exported_tiny, small_sts_dir, caplog
):
    """The quiet console's filters (each record once, torch's harmless note dropped) live as long as the command: a
    program (here pytest, whose record capture outlives one test) that calls main() twice still sees the same warning
    the second time."""
    import logging
    import warnings

    handlers = logging.getLogger().handlers
    before = ([list(handler.filters) for handler in handlers], [handler.level for handler in handlers])
    warning_filters = list(warnings.filters)
    for _ in range(2):
        assert main(["eval", str(exported_tiny), "--sts-dir", str(small_sts_dir), "--split", "dev", "--json"]) == 0
        assert ([list(handler.filters) for handler in handlers], [handler.level for handler in handlers]) == before
        assert warnings.filters == warning_filters
        assert logging.getLogger("torch.utils.cpp_extension").filters == []
        caplog.clear()
        logging.getLogger("sbert_nonling.tests").warning("the same warning")
        assert caplog.messages == ["the same warning"]


def test_eval_of_a_full_model_needs_trust_remote_code(exported_tiny, small_sts_dir, capsys):
    full = exported_tiny.parent / "full"
    assert main(["eval", str(full), "--sts-dir", str(small_sts_dir)]) == 2
    (message,) = capsys.readouterr().err.splitlines()  # the library's two lines, its advice given as the flag
    assert (
        message.endswith("Please pass --trust-remote-code to allow custom code to be run.")
        and "trust_remote_code=True" not in message
    )
    assert main(["eval", str(full), "--sts-dir", str(small_sts_dir), "--trust-remote-code", "--json"]) == 0


def test_export_subcommand_writes_a_plain_checkpoint(exported_tiny, tmp_path, capsys):
    assert main(["export", str(exported_tiny.parent / "full"), str(tmp_path / "again"), "--trust-remote-code"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"export": str(tmp_path / "again")}
    modules = json.loads((tmp_path / "again" / "modules.json").read_text())
    assert modules[0]["type"].startswith("sentence_transformers.") and modules[0]["type"].endswith(".Transformer")


def test_train_reports_bad_data_clearly(tmp_path, capsys):
    assert (
        main(["train", "simcse-unsup", "--tiny", "--output", str(tmp_path), "--text-file", str(tmp_path / "no.txt")])
        == 2
    )
    assert "does not exist" in capsys.readouterr().err
    assert main(["train", "simcse-unsup", "--tiny", "--output", str(tmp_path), "--set", "nonsense"]) == 2
    assert "--set expects key=value" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("bogus=1", "'bogus' is not a setting of VisualCSEConfig"),
        ("learning_rate=abc", "'learning_rate' must be float, got 'abc'"),
    ],
)
def test_train_refuses_an_unknown_or_mistyped_setting_naming_it(setting, message, tmp_path, capsys):
    assert main(["train", "visualcse", "--tiny", "--output", str(tmp_path), "--set", setting]) == 2
    error = capsys.readouterr().err
    assert message in error and ("valid settings:" in error or "bogus" not in setting)


def test_console_script_help_lists_the_subcommands():
    output = subprocess.run(
        [sys.executable, "-m", "sbert_nonling.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in ("train", "eval", "robustness", "export", "features", "render", "demo"):
        assert command in output


def test_demo_trains_evaluates_exports_and_reloads(tmp_path, data_dir, small_sts_dir, capsys):
    text_file = wiki_file(tmp_path / "wiki.txt", 300)
    image_dir = data_dir / "images" / "cifar10" / "train"
    argv = [
        "demo",
        "--sts-dir",
        str(small_sts_dir),
        "--text-file",
        str(text_file),
        "--image-dir",
        str(image_dir),
        "--output",
        str(tmp_path / "run"),
    ]
    assert main([*argv, "--max-steps", "3"]) == 0
    output = capsys.readouterr().out.strip().splitlines()
    result = json.loads(output[-1])
    assert result["export_max_abs_diff"] == 0.0 and result["global_step"] == 3
    assert set(result["dev_before"]) == {"STSBenchmark", "SICK-R", "avg"}
    assert any(line.startswith("before training") for line in output) and result["recipe"] == "visualcse"


def test_render_writes_a_png_preview(tmp_path, capsys):
    from PIL import Image

    output = tmp_path / "preview.png"
    assert (
        main(["render", "A man is playing a guitar.", "-o", str(output), "--max-patches", "32", "--scale", "2"]) == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    image = Image.open(output)
    assert image.size == (2 * 32 * 16, 2 * 16) and image.mode == "L"
    assert 1 < result["patches"] < 32 and result["max_patches"] == 32


def test_robustness_compares_a_token_and_a_pixel_model(exported_tiny, tmp_path, small_sts_dir, capsys):
    from sbert_nonling.models.pixel_model import build_pixel_model
    from sbert_nonling.modules.pixel_encoder import PixelEncoder

    encoder = PixelEncoder.from_config(
        max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
    )
    build_pixel_model(encoder, max_patches=16).save(str(tmp_path / "pixel"))
    argv = ["robustness", str(exported_tiny), str(tmp_path / "pixel"), "--sts-dir", str(small_sts_dir)]
    assert main(argv + ["--perturbations", "swap", "shuffle", "--trust-remote-code"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    report = json.loads(lines[-1])
    assert set(report) == {"export", "pixel"}
    assert set(report["pixel"]) == {"clean", "swap", "shuffle"} and report["pixel"]["swap"]["shift"] > 0
    assert lines[0].startswith("Model") and "swap" in lines[0]


def test_robustness_labels_same_named_folders_by_their_paths(exported_tiny, tmp_path, small_sts_dir, capsys):
    import shutil

    for run in ("run_a", "run_b"):
        shutil.copytree(exported_tiny, tmp_path / run / "model")
    folders = [str(tmp_path / run / "model") for run in ("run_a", "run_b")]
    assert main(["robustness", *folders, "--sts-dir", str(small_sts_dir), "--perturbations", "swap"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert list(report) == folders and report[folders[0]]["clean"] == report[folders[1]]["clean"]


def test_train_leaves_a_run_folder_with_settings_results_log_and_cards(tmp_path, data_dir, capsys):
    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    run = tmp_path / "run"
    argv = tiny_train_argv(text_file, run, "--max-steps", "1", "--set", "batch_size=16")
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["global_step"] == 1
    assert {"recipe.json", "results.json", "train.log", "model", "export", "checkpoints"} <= {
        path.name for path in run.iterdir()
    }
    assert "sbert_nonling" in (run / "train.log").read_text() and (run / "export" / "README.md").is_file()


def test_a_second_train_into_a_finished_run_is_refused_unless_overwrite(tmp_path, data_dir, capsys):
    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    run = tmp_path / "run"
    argv = tiny_train_argv(text_file, run, "--set", "batch_size=16")
    assert main([*argv, "--max-steps", "1"]) == 0
    weights = {path: path.read_bytes() for path in (run / "model").rglob("*.safetensors")}
    capsys.readouterr()
    assert main([*argv, "--max-steps", "2"]) == 2
    error = capsys.readouterr().err
    assert (
        "already holds a finished run (results.json, model, export)" in error
        and "--overwrite" in error
        and "--resume" in error
    )
    assert main([*argv, "--max-steps", "2", "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in (run / "model").rglob("*.safetensors")} == weights  # untouched
    assert main([*argv, "--max-steps", "2", "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["global_step"] == 2
    assert {path: path.read_bytes() for path in (run / "model").rglob("*.safetensors")} != weights


def test_resume_of_a_folder_without_a_checkpoint_says_so(tmp_path, capsys):
    argv = tiny_train_argv(wiki_file(tmp_path / "wiki.txt", 16), tmp_path / "run", "--resume")
    assert main(argv) == 2
    assert "holds no complete checkpoint to resume from" in capsys.readouterr().err


def test_help_documents_every_option():
    from sbert_nonling.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    undocumented = [
        f"{name} {action.dest}" for name, sub in commands.items() for action in sub._actions if not action.help
    ]
    assert undocumented == []


def _terminal_lines(output: bytes) -> list[str]:
    """The lines a terminal keeps of ``output`` (raw bytes: text mode would turn carriage returns into newlines): a
    progress bar redraws its own line with carriage returns, so each newline-ended line shows as what follows its last
    carriage return."""
    return [line.rsplit("\r", 1)[-1] for line in output.decode("utf-8").split("\n")[:-1]]


def test_train_is_quiet_by_default_and_verbose_brings_the_library_output_back(tmp_path, data_dir, small_sts_dir):
    import os

    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    argv = [
        sys.executable,
        "-m",
        "sbert_nonling.cli",
        "train",
        "simcse-unsup",
        "--tiny",
        "--max-steps",
        "20",
        "--text-file",
        str(text_file),
        "--sts-dir",
        str(small_sts_dir),
        "--set",
        "batch_size=16",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    outputs = {}
    for mode, flags in (("quiet", []), ("verbose", ["--verbose"])):
        run = subprocess.run([*argv, "--output", str(tmp_path / mode), *flags], capture_output=True, env=env)
        assert run.returncode == 0, run.stderr.decode("utf-8")[-2000:]
        outputs[mode] = _terminal_lines(run.stderr) + _terminal_lines(run.stdout)
    quiet, verbose = outputs["quiet"], outputs["verbose"]
    assert len(quiet) <= 15, "\n".join(quiet)
    assert json.loads(quiet[-1])["global_step"] == 20
    assert any(line.startswith("before training") for line in quiet) and any(
        "eval_STSBenchmark" in line for line in quiet
    )
    assert not any(bar in line for line in quiet for bar in ("Loading weights", "Writing model shards"))
    assert any("Loading weights" in line for line in verbose) and any(
        line.startswith("INFO sbert_nonling") for line in verbose
    )
    assert len(verbose) > len(quiet)


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"]])
def test_help_imports_no_torch_transformers_or_sentence_transformers(argv):
    script = (
        "import runpy, sys\n"
        f"sys.argv = ['sbert-nonling', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('sbert_nonling.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('torch', 'transformers', 'sentence_transformers', 'datasets')\n"
        "print('imported:', [name for name in heavy if name in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.splitlines()[-1] == "imported: []"


def test_train_help_lists_every_recipe():
    from sbert_nonling.app.recipes import list_recipes

    output = subprocess.run(
        [sys.executable, "-m", "sbert_nonling.cli", "train", "--help"], capture_output=True, text=True, check=True
    ).stdout
    listed = output.split("recipes:\n", 1)[1].replace(",", " ").split()
    assert listed == list_recipes() and "visualcse" in listed and "simcse-unsup" in listed


@pytest.mark.parametrize("argv", [["--verbose", "render", "Hi", "-o", "x.png"], ["render", "Hi", "-o", "x.png", "-v"]])
def test_verbose_goes_before_or_after_the_subcommand(argv):
    from sbert_nonling.cli import build_parser

    assert build_parser().parse_args(argv).verbose is True
    assert build_parser().parse_args(argv[1:] if argv[0] == "--verbose" else argv[:-1]).verbose is False


def test_a_diverging_run_stops_naming_the_step_and_saves_nothing_non_finite(tmp_path, data_dir, capsys):
    from safetensors.torch import load_file

    text_file = wiki_file(tmp_path / "wiki.txt", 200)
    run = tmp_path / "run"
    flags = ["--max-steps", "8", "--set", "batch_size=8", "--set", "learning_rate=1e6", "--set", "eval_steps=1"]
    assert main(tiny_train_argv(text_file, run, *flags)) == 1
    error = capsys.readouterr().err
    assert "Training diverged at step 2: the loss is nan" in error and "checkpoint-1, holds finite weights" in error
    assert not any((run / name).exists() for name in ("model", "export", "results.json", "model.partial"))
    kept = [path for path in (run / "checkpoints").iterdir()]
    assert [path.name for path in kept] == ["checkpoint-1"]
    for path in kept[0].rglob("*.safetensors"):
        assert all(bool(value.isfinite().all()) for value in load_file(str(path)).values()), path


def test_a_selection_that_cannot_run_is_refused_before_training(tmp_path, data_dir, small_sts_dir, capsys):
    import shutil

    shutil.copytree(small_sts_dir / "SICK", tmp_path / "sts" / "SICK")  # SICK only: no STS-B dev to select on
    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    run = tmp_path / "run"
    flags = ["--max-steps", "4", "--sts-dir", str(tmp_path / "sts"), "--set", "eval_steps=2", "--set", "batch_size=8"]
    assert main(tiny_train_argv(text_file, run, *flags)) == 2
    assert "holds no STS-B dev set" in capsys.readouterr().err
    assert not (run / "checkpoints").exists()  # refused before the first step


def test_an_output_that_cannot_hold_a_run_is_one_sentence(tmp_path, capsys):
    import os

    (tmp_path / "a-file").write_text("not a folder")
    argv = ["train", "simcse-unsup", "--tiny", "--text-file", str(wiki_file(tmp_path / "wiki.txt", 16))]
    assert main([*argv, "--output", str(tmp_path / "a-file")]) == 2
    assert f"--output '{tmp_path / 'a-file'}' is a file, not a folder" in capsys.readouterr().err
    assert main([*argv, "--output", str(tmp_path / "a-file" / "run")]) == 2
    assert "Cannot write into --output" in capsys.readouterr().err
    if os.geteuid() == 0:  # root writes through permission bits: /sys refuses writes to everyone
        read_only = "/sys"
    else:
        (tmp_path / "read-only").mkdir(mode=0o555)
        read_only = str(tmp_path / "read-only")
    assert main([*argv, "--output", read_only]) == 2
    error = capsys.readouterr().err
    assert f"Cannot write into --output {read_only!r} (Permission denied); choose a folder you can write to" in error


def test_a_failed_first_checkpoint_does_not_point_to_resume(tmp_path):
    from sbert_nonling.training.checkpoints import write_failure

    message = str(write_failure(tmp_path / "checkpoints" / "checkpoint-2", OSError(13, "Permission denied")))
    assert "there is no earlier checkpoint to resume from" in message and "without --resume" in message
    assert "again with --resume" not in message


def test_features_with_an_unreachable_cnn_is_one_line_naming_it_and_the_flag(tmp_path, data_dir):
    """ResNet-50's weights come from the weights' download site, which cannot be reached here (an empty TORCH_HOME:
    nothing cached): one line naming the CNN, --encoder and the offline way, no traceback."""
    import os

    images = tmp_path / "images"
    images.mkdir()
    for path in sorted((data_dir / "images" / "flickr8k").iterdir())[:2]:
        (images / path.name).symlink_to(path.resolve())
    argv = [
        sys.executable,
        "-m",
        "sbert_nonling.cli",
        "features",
        "--image-dir",
        str(images),
        "--encoder",
        "resnet50",
        "--output",
        str(tmp_path / "features.safetensors"),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCH_HOME": str(tmp_path / "torch-home")}
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    (message,) = [line for line in run.stderr.splitlines() if line.strip()]
    assert message.startswith(
        "sbert-nonling features: error: Image encoder 'resnet50' (--encoder) could not be loaded"
    )
    assert "--encoder efficientnet-lite0" in message


#: main() in a fresh process; the last line of its output names the heavy libraries it imported.
REFUSAL_SCRIPT = (
    "import sys\n"
    "from sbert_nonling.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = ('torch', 'transformers', 'sentence_transformers', 'datasets')\n"
    "print('imported:', [name for name in heavy if name in sys.modules])\n"
    "sys.exit(code)\n"
)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "simcse-unsupp", "--output", "run"],
            "Unknown recipe 'simcse-unsupp' (closest: 'simcse-unsup', 'simcse-sup'); recipes: ",
        ),
        (
            ["train", "my-recipe.json", "--output", "run"],
            "Recipe file 'my-recipe.json' does not exist (a bundled recipe is named without .json).",
        ),
        (
            ["train", "own-method.json", "--output", "run"],
            "recipe file own-method.json: \"import\" names the module 'not_a_module', which cannot be imported (No "
            "module named 'not_a_module'); install its package",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--set", "learning_rate"],
            "--set expects key=value, got 'learning_rate'.",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--set", "learnin_rate=1e-5"],
            "'learnin_rate' is not a setting of SimCSEConfig",
        ),
        (
            ["train", "visualcse", "--output", "run", "--set", "learning_rate=abc"],
            "'learning_rate' must be float, got 'abc' (str).",
        ),
        (
            ["train", "visualcse", "--output", "run", "--set", "tiny=true"],
            "'tiny' is set by the tiny option (--tiny), not overridden.",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--tiny", "--model", "bert-base-uncased"],
            "Pass either --tiny (a small random",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--text-file", "missing.txt"],
            "--text-file 'missing.txt' does not exist, and it is not a Hub dataset name (owner/name?split=...).",
        ),
        (
            ["train", "visualcse", "--output", "run", "--image-dir", "a-file.txt"],
            "--image-dir 'a-file.txt' is a file; it takes a folder.",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--model", "tiny:xyz"],
            "Model 'tiny:xyz' (--model) is not a tiny model; the tiny models are 'tiny:bert', 'tiny:clip', "
            "'tiny:pixel'.",
        ),
        (
            ["eval", "tiny:bert", "--sts-dir", "sts"],
            "'tiny:bert' (the model argument) is a tiny model name, which training builds; pass a saved model.",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--text-file", "sts"],
            "--text-file 'sts' is a folder; it takes a file.",
        ),
        (
            ["train", "mcse", "--output", "run", "--heldout-images", "missing.txt"],
            "--heldout-images 'missing.txt' does not exist.",
        ),
        (
            ["train", "mcse", "--output", "run", "--image-features", "owner/features"],
            "--image-features 'owner/features' does not exist.",
        ),
        (
            ["train", "pixel-linguist", "--output", "run", "--stsb-multi-dir", "missing"],
            "--stsb-multi-dir 'missing' does not exist.",
        ),
        (
            ["train", "simcse-unsup", "--output", "run", "--model", "runs/old/model"],
            "Model folder 'runs/old/model' (--model) does not exist",
        ),
        (
            ["eval", "runs/old/model", "--sts-dir", "sts"],
            "Model folder 'runs/old/model' (the model argument) does not exist, and it is not",
        ),
        (["eval", "some-model", "--sts-dir", "missing"], "--sts-dir 'missing' does not exist."),
        (["eval", "some-model", "--tasks", "sts-multilingual"], "--tasks sts-multilingual needs --sts-dir"),
        (
            ["robustness", "./missing", "--sts-dir", "sts"],
            "Model folder './missing' (the models argument) does not exist",
        ),
        (["export", "./missing", "export"], "Model folder './missing' (the model argument) does not exist"),
        (["push", "missing", "me/name"], "the folder argument 'missing' does not exist."),
        (
            ["features", "--image-dir", "missing", "--output", "features.safetensors"],
            "--image-dir 'missing' does not exist.",
        ),
        (
            ["features", "--image-dir", "sts", "--captions", "missing.txt", "--output", "clip.safetensors"],
            "--captions 'missing.txt' does not exist.",
        ),
        (
            ["demo", "--sts-dir", "sts", "--text-file", "missing.txt", "--image-dir", "sts"],
            "--text-file 'missing.txt' does not exist, and it",
        ),
        (
            ["features", "--image-dir", "sts", "--output", "existing.safetensors"],
            "--output 'existing.safetensors' already exists; choose another file, or pass --overwrite",
        ),
        (
            ["features", "--image-dir", "sts", "--output", "/sys/features.safetensors"],
            "Cannot write into --output '/sys/features.safetensors' (",
        ),
        (["export", "some-model", "/sys/export"], "Cannot write into the export folder '/sys/export' ("),
        (["push", "sts", "me/name", "--dry-run", "/sys/upload"], "Cannot write into the dry-run folder '/sys/upload'"),
        (
            ["train", "mcse", "--output", "run", "--image-features", "cut.safetensors"],
            "--image-features 'cut.safetensors' is not a whole safetensors file (its header does not fit in its 6 "
            "bytes: cut short or not safetensors); extract them again with sbert-nonling features",
        ),
        (
            ["export", "a-run", "export"],
            "'a-run' (the model argument) is the run folder of sbert-nonling train, not a saved model; pass "
            "'a-run/model' or 'a-run/export'",
        ),
        (["eval", "a-run", "--sts-dir", "sts"], "is the run folder of sbert-nonling train, not a saved model"),
        (
            ["train", "simcse-unsup", "--output", "run", "--text-file", "empty.txt"],
            "--text-file 'empty.txt' is empty (no line holds text); give a file with data.",
        ),
        (
            ["train", "mcse", "--output", "run", "--captions-file", "empty.txt"],
            "--captions-file 'empty.txt' is empty (no line holds text)",
        ),
        (["train", "simcse-unsup", "--output", "run", "--sts-dir", "sts"], "No STS dev files found in 'sts'"),
        (
            ["reproduce", "simcse-unsup", "--output", "run"],
            "reproduce scores the 7 STS test sets and selects on STS-B",
        ),
        (
            ["reproduce", "simcse-unsup", "--output", "run", "--sts-dir", "dev-only"],
            "No STS test files found in 'dev-only'; expected SentEval's layout",
        ),
    ],
)
def test_an_argument_mistake_is_one_sentence_before_any_heavy_import(argv, message, tmp_path):
    """Refused with rc 2 and one line, before torch and the libraries are imported (the time this takes is in
    benchmarks/cli_refusals.py), and before the output folder is touched (/sys: written by nobody, root included)."""
    (tmp_path / "sts").mkdir()
    (tmp_path / "a-file.txt").write_text("not a folder\n")
    (tmp_path / "existing.safetensors").write_bytes(b"hours of extraction")
    (tmp_path / "cut.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00")
    for saved in ("model", "export"):  # a run folder of sbert-nonling train
        (tmp_path / "a-run" / saved).mkdir(parents=True)
        (tmp_path / "a-run" / saved / "modules.json").write_text("[]")
    (tmp_path / "a-run" / "results.json").write_text("{}")
    (tmp_path / "empty.txt").write_text("\n  \n")
    (tmp_path / "own-method.json").write_text('{"import": "not_a_module", "method": "own-method"}')
    (tmp_path / "dev-only" / "STSBenchmark").mkdir(parents=True)
    (tmp_path / "dev-only" / "STSBenchmark" / "sts-dev.csv").write_text(
        "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.\n"
        "main-captions\tMSRvid\t2012test\t0004\t3.800\tA man is playing a flute.\tA man is playing a flute.\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", REFUSAL_SCRIPT, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=cli_environment(),
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith(f"sbert-nonling {argv[0]}: error: ") and message in line
    assert run.stdout.splitlines()[-1] == "imported: []"
    assert not (tmp_path / "run").exists() and not (tmp_path / "export").exists()
    assert (tmp_path / "existing.safetensors").read_bytes() == b"hours of extraction"


def test_data_options_naming_hub_datasets_pass_the_argument_checks():
    from sbert_nonling.cli import build_parser, check_arguments

    argv = [
        "train",
        "visualcse",
        "--output",
        "run",
        "--text-file",
        "owner/wiki?split=train",
        "--image-dir",
        "owner/images?image=img&label=y",
    ]
    check_arguments(build_parser().parse_args(argv))  # read (and any bad option named) when the run loads them
    check_arguments(build_parser().parse_args(["eval", "sentence-transformers/all-MiniLM-L6-v2", "--sts-dir", "."]))


@pytest.mark.parametrize("command", ["eval", "robustness"])
def test_a_model_that_cannot_be_loaded_offline_is_one_sentence_naming_it_and_the_offline_way(
    command, small_sts_dir, tmp_path
):
    argv = [
        sys.executable,
        "-m",
        "sbert_nonling.cli",
        command,
        "sentence-transformers/all-mpnet-base-v2",
        "--sts-dir",
        str(small_sts_dir),
    ]
    env = {**cli_environment(), "HF_HOME": str(tmp_path / "empty-hf-home")}  # nothing cached, HF_HUB_OFFLINE=1
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    (message,) = [line for line in run.stderr.splitlines() if line.strip()]
    argument = "the model argument" if command == "eval" else "the models argument"
    assert message.startswith(
        f"sbert-nonling {command}: error: Model 'sentence-transformers/all-mpnet-base-v2' ({argument}) could not be "
        "loaded"
    )
    assert message.endswith(
        "Offline: pass the folder of a saved model instead (OUT/model or OUT/export of sbert-nonling train, or a "
        "folder written by model.save)."
    )


def test_help_describes_the_tool_and_points_to_nothing_a_pip_user_lacks():
    from sbert_nonling.cli import DESCRIPTION, build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0]
    texts = [parser.description, *(action.help for action in commands._choices_actions)]
    texts += [action.help for sub in commands.choices.values() for action in sub._actions]
    assert parser.description == DESCRIPTION and "module" not in DESCRIPTION
    assert [
        text for text in texts if text and ("sbert_nonling/" in text or "sbert_nonling." in text or "docs/" in text)
    ] == []


#: Names a message may give as ``name=`` that are neither a setting nor a keyword of this package, each with what it
#: is.
OTHER_NAMES = {
    "model_type": "the field of a transformers config that names its family",
    "optim": "transformers' TrainingArguments field naming the optimizer",
    "sampling_rate": "the key of an audio dict that holds the rate",
    "caption": "a column role of a Hub caption dataset (owner/name?caption=COLUMN)",
    "num_attention_heads": "a transformers BertConfig keyword that build_tiny_encoder passes on",
}


def _message_texts() -> list[tuple[str, str]]:
    """(file, literal text) of every message the package builds: the arguments of an exception, a warning, a log
    record or a print (an f-string's literal parts joined)."""
    from pathlib import Path

    messages = []
    for path in (Path(__file__).resolve().parents[1] / "sbert_nonling").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called.endswith(("Error", "Exception", "Unreachable", "warning", "warn", "info", "print")):
                    parts = [
                        item.value
                        for argument in node.args
                        for item in ast.walk(argument)
                        if isinstance(item, ast.Constant)
                    ]
                    messages.append((path.name, "".join(part for part in parts if isinstance(part, str))))
    return messages


def test_every_hint_in_a_message_names_a_real_flag_setting_or_keyword():
    """A ``--flag`` is an option of the CLI, ``--set KEY=`` / ``setting 'KEY'`` a recipe setting, and ``name=`` a
    setting or a keyword of the package's functions (e.g. the single-class image folder warning once advised the
    non-existent ``modality_loss=simclr``)."""
    from pathlib import Path

    from sbert_nonling.cli import build_parser
    from sbert_nonling.configs import METHOD_CONFIGS

    parser = build_parser()
    flags = {option for action in parser._actions for option in action.option_strings}
    for sub in parser._subparsers._group_actions[0].choices.values():
        flags |= {option for action in sub._actions for option in action.option_strings}
    settings = {row.name for config in METHOD_CONFIGS.values() for row in config.describe()}
    settings |= {name for config in METHOD_CONFIGS.values() for name in config.field_names()}
    keywords = set()
    for path in (Path(__file__).resolve().parents[1] / "sbert_nonling").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                keywords |= {argument.arg for argument in [*node.args.args, *node.args.kwonlyargs]}
            if isinstance(node, ast.ClassDef):  # a dataclass's fields are its constructor's keywords
                keywords |= {
                    item.target.id
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
    wrong = []
    for name, text in _message_texts():
        wrong += [(name, flag) for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text) if flag not in flags]
        named_settings = re.findall(r"--set ([a-z_][\w.]*)=", text) + re.findall(r"setting '([\w.]+)'", text)
        wrong += [(name, key) for key in named_settings if key not in settings]
        named = re.findall(r"(?<![\w.-])([a-z][a-z0-9_]*)=(?!=)", text)
        wrong += [(name, f"{key}=") for key in named if key not in settings | keywords | set(OTHER_NAMES)]
    assert wrong == []


def test_the_hub_dataset_form_the_checks_accept_is_the_one_the_readers_read():
    from sbert_nonling.cli import HUB_NAME
    from sbert_nonling.data.hub import HUB_NAME as READERS_HUB_NAME

    assert HUB_NAME.pattern == READERS_HUB_NAME.pattern


def test_train_dry_run_prints_the_plan_and_writes_nothing(tmp_path, data_dir):
    from tests.conftest import cli_environment, tiny_train_command

    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    command = tiny_train_command(text_file, tmp_path / "run", "--max-steps", "5", "--dry-run")
    completed = subprocess.run(command, env=cli_environment(), capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = completed.stdout.splitlines()
    assert lines[0] == "simcse-unsup: fp32 (auto), 0 DataLoader workers" and lines[1] == f"writes {tmp_path / 'run'}"
    assert (
        "  train: 5 optimizer steps (NonLinguisticTrainer); batches: train 5; losses eager (not compiled), text "
        "padded per batch" in lines
    )
    assert json.loads(lines[-1])["stages"][0]["batches"] == {"train": 5}
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("steps", ["0", "-5"])
def test_train_refuses_max_steps_below_one(tmp_path, steps):
    assert main(tiny_train_argv(tmp_path, tmp_path / "run", "--max-steps", steps)) == 2
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_killed_dataloader_worker_ends_the_run_in_one_sentence_naming_the_checkpoint(tmp_path, data_dir):
    import os
    import signal
    import time

    from sbert_nonling.training.checkpoints import COMPLETE_MARKER
    from tests.conftest import cli_environment

    text_file = wiki_file(tmp_path / "wiki.txt", 200)
    command = [
        *[sys.executable, "-m", "sbert_nonling.cli", "train", "visualcse", "--tiny", "--max-steps", "400"],
        *["--text-file", str(text_file), "--image-dir", str(data_dir / "images" / "cifar10" / "train")],
        *[
            "--output",
            str(tmp_path / "run"),
            "--set",
            "dataloader_num_workers=2",
            "--set",
            "eval_steps=4",
            "--set",
            "batch_size=8",
        ],
    ]
    process = subprocess.Popen(
        command, env=cli_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    while (
        not list((tmp_path / "run").glob(f"checkpoints/checkpoint-*/{COMPLETE_MARKER}"))
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    workers = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
    os.kill(int(workers[0]), signal.SIGKILL)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1
    error_lines = [
        line.rsplit("\r", 1)[-1] for line in stderr.splitlines() if "error" in line.lower() or "Traceback" in line
    ]
    assert len(error_lines) == 1 and "Traceback" not in stderr and "lost sys.stderr" not in stderr, stderr[-3000:]
    # torch names the worker in one of two sentences, by whether its signal handler or its timeout check sees the death
    said = (
        f"DataLoader worker (pid {workers[0]}) is killed by signal: Killed",
        f"DataLoader worker (pid(s) {workers[0]}) exited unexpectedly",
    )
    assert any(sentence in error_lines[0] for sentence in said), error_lines[0]
    assert f"The last complete checkpoint is {tmp_path / 'run' / 'checkpoints'}/checkpoint-" in error_lines[0]


def test_export_refuses_an_existing_export_unless_overwrite(exported_tiny, tmp_path, capsys):
    argv = ["export", str(exported_tiny.parent / "full"), str(exported_tiny), "--trust-remote-code"]
    (exported_tiny / "note.txt").write_text("kept")
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert (
        f"sbert-nonling export: error: Export folder '{exported_tiny}' is not empty" in error
        and "--overwrite" in error
    )
    assert (exported_tiny / "note.txt").is_file()
    assert main([*argv, "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"export": str(exported_tiny)}
    assert not (exported_tiny / "note.txt").exists()
    (tmp_path / "a-file").write_text("not a folder")
    assert (
        main(
            [
                "export",
                str(exported_tiny.parent / "full"),
                str(tmp_path / "a-file"),
                "--trust-remote-code",
                "--overwrite",
            ]
        )
        == 2
    )
    assert f"Export target '{tmp_path / 'a-file'}' is a file, not a folder" in capsys.readouterr().err


def _quiet_run(argv: list[str]) -> tuple[bytes, list[str]]:
    """The raw stderr and the terminal lines (stderr, then stdout) of a quiet ``sbert-nonling`` process."""
    from tests.conftest import cli_environment

    run = subprocess.run(
        [sys.executable, "-m", "sbert_nonling.cli", *argv], capture_output=True, env=cli_environment(), timeout=600
    )
    assert run.returncode == 0, run.stderr.decode("utf-8")[-2000:]
    return run.stderr, _terminal_lines(run.stderr) + _terminal_lines(run.stdout)


def test_audiocse_shows_the_card_asset_warning_once_and_no_progress_bar(tmp_path, data_dir):
    """Every saved card (checkpoints, model) tries to write the audio rows of the dataset table as wav files; the
    console says so once. No bar either (sentence-transformers' "Computing widget examples")."""
    audio = tmp_path / "audio"
    audio.mkdir()
    for path in sorted((data_dir / "audio" / "fsdd").glob("[01]_*_[0-3].wav")):  # 2 digits x 6 speakers x 4 takes
        (audio / path.name).symlink_to(path)
    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    argv = [
        "train",
        "audiocse",
        "--tiny",
        "--max-steps",
        "4",
        "--text-file",
        str(text_file),
        "--audio-dir",
        str(audio),
    ]
    argv += [
        "--audio-label-regex",
        r"^\d+_([a-z]+)_",
        "--output",
        str(tmp_path / "run"),
        "--set",
        "eval_steps=2",
        "--set",
        "batch_size=8",
    ]
    stderr, lines = _quiet_run(argv)
    assert [line for line in lines if "Could not save predict example asset" in line] == [
        "WARNING sentence_transformers.base.model_card: Could not save predict example asset of type dict"
    ]
    assert b"%|" not in stderr, stderr.decode("utf-8")  # no tqdm bar, not even one erased after it ran
    assert lines[-2] == "losses eager (not compiled), text padded per batch; fp32"  # how the steps ran
    assert all(line.startswith(("{'", '{"')) for line in lines[1:-2] + lines[-1:]), "\n".join(
        lines
    )  # then the logs and the JSON line
    assert json.loads(lines[-1])["global_step"] == 4


def test_mcse_draws_no_retrieval_progress_bar(tmp_path, flickr_subset, small_sts_dir):
    heldout = tmp_path / "heldout.txt"
    heldout.write_text(
        "\n".join(sorted(path.name for path in (flickr_subset / "images").iterdir())[:3]) + "\n", encoding="utf-8"
    )
    argv = ["train", "mcse", "--tiny", "--max-steps", "5", "--text-file", str(wiki_file(tmp_path / "wiki.txt", 64))]
    argv += ["--captions-file", str(flickr_subset / "captions.txt"), "--image-dir", str(flickr_subset / "images")]
    argv += ["--image-features", str(flickr_subset / "features.safetensors"), "--heldout-images", str(heldout)]
    argv += ["--sts-dir", str(small_sts_dir), "--output", str(tmp_path / "run"), "--set", "batch_size=8"]
    stderr, lines = _quiet_run(argv)
    assert b"%|" not in stderr and not any("Batches" in line for line in lines), stderr.decode("utf-8")
    assert set(json.loads(lines[-1])["retrieval"]) == {
        "text_to_image_R@1",
        "text_to_image_R@5",
        "image_to_text_R@1",
        "image_to_text_R@5",
    }


def test_eval_mteb_labels_its_row_and_says_a_superseded_task_once(exported_tiny, small_sts_dir):
    stderr, lines = _quiet_run(["eval", str(exported_tiny), "--sts-dir", str(small_sts_dir), "--mteb"])
    assert stderr.decode("utf-8").count("is superseded by") <= 1 and b"Warning:" not in stderr, stderr.decode("utf-8")
    assert [line.split()[0:3] for line in lines if line.startswith("export")] == [["export", "(sts,", "MTEB)"]]


def test_a_quiet_console_leaves_out_torch_s_compiler_note_on_a_machine_without_a_gpu():
    """torch logs it (a record, not a Python warning) when a compiled loss is built on a CPU; quiet leaves it out,
    verbose shows it."""
    script = (
        "import logging, sys\n"
        "from sbert_nonling.cli import _console_output\n"
        "with _console_output(sys.argv[1] == 'verbose'):\n"
        "    import torch.utils.cpp_extension\n"
        "    note = logging.getLogger('torch.utils.cpp_extension')\n"
        "    note.warning(\"No CUDA runtime is found, using CUDA_HOME='/x'\")\n"
        "    note.warning('another note')\n"
    )
    outputs = {
        mode: subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, env=cli_environment(), timeout=120
        ).stderr
        for mode in ("quiet", "verbose")
    }
    assert "No CUDA runtime is found" not in outputs["quiet"] and "another note" in outputs["quiet"]
    assert "No CUDA runtime is found" in outputs["verbose"]


def test_a_tiny_model_name_is_a_model_to_train_from(tmp_path, capsys):
    """``--model tiny:bert`` trains the recipe from a tiny random BERT (the recipe's other settings kept): the command
    line's check accepts it as it accepts a Hub name."""
    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    argv = ["train", "simcse-unsup", "--model", "tiny:bert", "--text-file", str(text_file), "--output", str(tmp_path)]
    assert main([*argv, "--dry-run", "--max-steps", "1"]) == 0
    assert "simcse-unsup" in capsys.readouterr().out
