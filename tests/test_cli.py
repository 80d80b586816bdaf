from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sbert_nonling.cli import main
from tests.conftest import wiki_file


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


def test_eval_of_a_full_model_needs_trust_remote_code(exported_tiny, small_sts_dir, capsys):
    full = exported_tiny.parent / "full"
    assert main(["eval", str(full), "--sts-dir", str(small_sts_dir)]) == 2
    assert "trust_remote_code" in capsys.readouterr().err
    assert main(["eval", str(full), "--sts-dir", str(small_sts_dir), "--trust-remote-code", "--json"]) == 0


def test_export_subcommand_writes_a_plain_checkpoint(exported_tiny, tmp_path, capsys):
    assert main(["export", str(exported_tiny.parent / "full"), str(tmp_path / "again"), "--trust-remote-code"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"export": str(tmp_path / "again")}
    modules = json.loads((tmp_path / "again" / "modules.json").read_text())
    assert modules[0]["type"].startswith("sentence_transformers.") and modules[0]["type"].endswith(".Transformer")


def test_train_reports_bad_data_clearly(tmp_path, capsys):
    assert main(["train", "simcse-unsup", "--tiny", "--output", str(tmp_path), "--text-file", str(tmp_path / "no.txt")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["train", "simcse-unsup", "--tiny", "--output", str(tmp_path), "--set", "nonsense"]) == 2
    assert "--set expects key=value" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setting", "message"),
    [("bogus=1", "'bogus' is not a setting of VisualCSEConfig"), ("learning_rate=abc", "'learning_rate' must be float, got 'abc'")],
)
def test_train_refuses_an_unknown_or_mistyped_setting_naming_it(setting, message, tmp_path, capsys):
    assert main(["train", "visualcse", "--tiny", "--output", str(tmp_path), "--set", setting]) == 2
    error = capsys.readouterr().err
    assert message in error and ("valid settings:" in error or "bogus" not in setting)


def test_console_script_help_lists_the_subcommands():
    output = subprocess.run([sys.executable, "-m", "sbert_nonling.cli", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("train", "eval", "robustness", "export", "features", "render", "demo"):
        assert command in output


def test_demo_trains_evaluates_exports_and_reloads(tmp_path, data_dir, small_sts_dir, capsys):
    text_file = wiki_file(tmp_path / "wiki.txt", 300)
    image_dir = data_dir / "images" / "cifar10" / "train"
    argv = ["demo", "--sts-dir", str(small_sts_dir), "--text-file", str(text_file), "--image-dir", str(image_dir), "--output", str(tmp_path / "run")]
    assert main([*argv, "--max-steps", "3"]) == 0
    output = capsys.readouterr().out.strip().splitlines()
    result = json.loads(output[-1])
    assert result["export_max_abs_diff"] == 0.0 and result["global_step"] == 3
    assert set(result["dev_before"]) == {"STSBenchmark", "SICK-R", "avg"}
    assert any(line.startswith("before training") for line in output) and result["recipe"] == "visualcse"


def test_render_writes_a_png_preview(tmp_path, capsys):
    from PIL import Image

    output = tmp_path / "preview.png"
    assert main(["render", "A man is playing a guitar.", "-o", str(output), "--max-patches", "32", "--scale", "2"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    image = Image.open(output)
    assert image.size == (2 * 32 * 16, 2 * 16) and image.mode == "L"
    assert 1 < result["patches"] < 32 and result["max_patches"] == 32


def test_robustness_compares_a_token_and_a_pixel_model(exported_tiny, tmp_path, small_sts_dir, capsys):
    from sbert_nonling.models.pixel_model import build_pixel_model
    from sbert_nonling.modules.pixel_encoder import PixelEncoder

    encoder = PixelEncoder.from_config(max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64)
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
    argv = ["train", "simcse-unsup", "--tiny", "--max-steps", "1", "--text-file", str(text_file), "--output", str(run), "--set", "batch_size=16"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["global_step"] == 1
    assert {"recipe.json", "results.json", "train.log", "model", "export", "checkpoints"} <= {path.name for path in run.iterdir()}
    assert "sbert_nonling" in (run / "train.log").read_text() and (run / "export" / "README.md").is_file()


def test_a_second_train_into_a_finished_run_is_refused_unless_overwrite(tmp_path, data_dir, capsys):
    text_file = wiki_file(tmp_path / "wiki.txt", 64)
    run = tmp_path / "run"
    argv = ["train", "simcse-unsup", "--tiny", "--text-file", str(text_file), "--output", str(run), "--set", "batch_size=16"]
    assert main([*argv, "--max-steps", "1"]) == 0
    weights = {path: path.read_bytes() for path in (run / "model").rglob("*.safetensors")}
    capsys.readouterr()
    assert main([*argv, "--max-steps", "2"]) == 2
    error = capsys.readouterr().err
    assert "already holds a finished run (results.json, model, export)" in error and "--overwrite" in error and "--resume" in error
    assert main([*argv, "--max-steps", "2", "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in (run / "model").rglob("*.safetensors")} == weights  # untouched
    assert main([*argv, "--max-steps", "2", "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["global_step"] == 2
    assert {path: path.read_bytes() for path in (run / "model").rglob("*.safetensors")} != weights


def test_resume_of_a_folder_without_a_checkpoint_says_so(tmp_path, capsys):
    argv = ["train", "simcse-unsup", "--tiny", "--text-file", str(tmp_path / "unread.txt"), "--output", str(tmp_path / "run"), "--resume"]
    assert main(argv) == 2
    assert "holds no complete checkpoint to resume from" in capsys.readouterr().err


def test_help_documents_every_option():
    from sbert_nonling.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    undocumented = [f"{name} {action.dest}" for name, sub in commands.items() for action in sub._actions if not action.help]
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
    assert any(line.startswith("before training") for line in quiet) and any("eval_STSBenchmark" in line for line in quiet)
    assert not any(bar in line for line in quiet for bar in ("Loading weights", "Writing model shards"))
    assert any("Loading weights" in line for line in verbose) and any(line.startswith("INFO sbert_nonling") for line in verbose)
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
        "heavy = ('torch', 'transformers', 'sentence_transformers', 'datasets', 'sbert_nonling.configs')\n"
        "print('imported:', [name for name in heavy if name in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.splitlines()[-1] == "imported: []"


def test_train_help_lists_every_recipe():
    from sbert_nonling.app.recipes import list_recipes

    output = subprocess.run([sys.executable, "-m", "sbert_nonling.cli", "train", "--help"], capture_output=True, text=True, check=True).stdout
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
    argv = [
        "train",
        "simcse-unsup",
        "--tiny",
        "--max-steps",
        "8",
        "--text-file",
        str(text_file),
        "--output",
        str(run),
        "--set",
        "batch_size=8",
        "--set",
        "learning_rate=1e6",
        "--set",
        "eval_steps=1",
    ]
    assert main(argv) == 1
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
    argv = [
        "train",
        "simcse-unsup",
        "--tiny",
        "--max-steps",
        "4",
        "--text-file",
        str(text_file),
        "--output",
        str(run),
        "--sts-dir",
        str(tmp_path / "sts"),
        "--set",
        "eval_steps=2",
        "--set",
        "batch_size=8",
    ]
    assert main(argv) == 2
    assert "holds no STS-B dev set" in capsys.readouterr().err
    assert not (run / "checkpoints").exists()  # refused before the first step


def test_an_output_that_cannot_hold_a_run_is_one_sentence(tmp_path, capsys):
    import os

    (tmp_path / "a-file").write_text("not a folder")
    argv = ["train", "simcse-unsup", "--tiny", "--text-file", str(tmp_path / "unread.txt")]
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
    assert message.startswith("sbert-nonling features: error: Image encoder 'resnet50' (--encoder) could not be loaded")
    assert "--encoder efficientnet-lite0" in message


def test_export_refuses_an_existing_export_unless_overwrite(exported_tiny, tmp_path, capsys):
    argv = ["export", str(exported_tiny.parent / "full"), str(exported_tiny), "--trust-remote-code"]
    (exported_tiny / "note.txt").write_text("kept")
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert f"sbert-nonling export: error: Export folder '{exported_tiny}' is not empty" in error and "--overwrite" in error
    assert (exported_tiny / "note.txt").is_file()
    assert main([*argv, "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"export": str(exported_tiny)}
    assert not (exported_tiny / "note.txt").exists()
    (tmp_path / "a-file").write_text("not a folder")
    assert main(["export", str(exported_tiny.parent / "full"), str(tmp_path / "a-file"), "--trust-remote-code", "--overwrite"]) == 2
    assert f"Export target '{tmp_path / 'a-file'}' is a file, not a folder" in capsys.readouterr().err


def _quiet_run(argv: list[str]) -> tuple[bytes, list[str]]:
    """The raw stderr and the terminal lines (stderr, then stdout) of a quiet ``sbert-nonling`` process."""
    from tests.conftest import cli_environment

    run = subprocess.run([sys.executable, "-m", "sbert_nonling.cli", *argv], capture_output=True, env=cli_environment(), timeout=600)
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
    argv = ["train", "audiocse", "--tiny", "--max-steps", "4", "--text-file", str(text_file), "--audio-dir", str(audio)]
    argv += ["--audio-label-regex", r"^\d+_([a-z]+)_", "--output", str(tmp_path / "run"), "--set", "eval_steps=2", "--set", "batch_size=8"]
    stderr, lines = _quiet_run(argv)
    assert [line for line in lines if "Could not save predict example asset" in line] == [
        "WARNING sentence_transformers.base.model_card: Could not save predict example asset of type dict"
    ]
    assert b"%|" not in stderr, stderr.decode("utf-8")  # no tqdm bar, not even one erased after it ran
    assert all(line.startswith(("{'", '{"')) for line in lines[1:]), "\n".join(lines)  # then the logs and the JSON line
    assert json.loads(lines[-1])["global_step"] == 4


def test_mcse_draws_no_retrieval_progress_bar(tmp_path, flickr_subset, small_sts_dir):
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(sorted(path.name for path in (flickr_subset / "images").iterdir())[:3]) + "\n", encoding="utf-8")
    argv = ["train", "mcse", "--tiny", "--max-steps", "2", "--text-file", str(wiki_file(tmp_path / "wiki.txt", 64))]
    argv += ["--captions-file", str(flickr_subset / "captions.txt"), "--image-dir", str(flickr_subset / "images")]
    argv += ["--image-features", str(flickr_subset / "features.safetensors"), "--heldout-images", str(heldout)]
    argv += ["--sts-dir", str(small_sts_dir), "--output", str(tmp_path / "run"), "--set", "batch_size=8"]
    stderr, lines = _quiet_run(argv)
    assert b"%|" not in stderr and not any("Batches" in line for line in lines), stderr.decode("utf-8")
    assert set(json.loads(lines[-1])["retrieval"]) == {"text_to_image_R@1", "text_to_image_R@5", "image_to_text_R@1", "image_to_text_R@5"}


def test_eval_mteb_labels_its_row_and_says_a_superseded_task_once(exported_tiny, small_sts_dir):
    stderr, lines = _quiet_run(["eval", str(exported_tiny), "--sts-dir", str(small_sts_dir), "--mteb"])
    assert stderr.decode("utf-8").count("is superseded by") <= 1 and b"Warning:" not in stderr, stderr.decode("utf-8")
    assert [line.split()[0:3] for line in lines if line.startswith("export")] == [["export", "(sts,", "MTEB)"]]
