"""The PNGs of `eval --plots` (geometry, anisotropy, training curves, robustness, rendered text), through the CLI."""

from __future__ import annotations

import json

from PIL import Image

from sbert_nonling.models import build_pixel_model
from sbert_nonling.modules.pixel_encoder import PixelEncoder


def test_eval_cli_writes_every_plot_and_the_multilingual_and_visual_tables(tmp_path, small_sts_dir, data_dir, capsys):
    from sbert_nonling.cli import main

    multi = tmp_path / "multi"
    multi.mkdir()
    for language in ("en", "de"):
        lines = (data_dir / "stsb_multi" / f"stsb-{language}-dev.csv").read_text(encoding="utf-8").splitlines()[:30]
        (multi / f"stsb-{language}-dev.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    encoder = PixelEncoder.from_config(
        max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
    )
    build_pixel_model(encoder, max_patches=16).save(str(tmp_path / "pixel"))
    run = tmp_path / "run" / "checkpoints" / "checkpoint-4"
    run.mkdir(parents=True)
    history = [{"step": 2, "loss": 3.0}, {"step": 4, "loss": 2.5, "eval_STSBenchmark_spearman_cosine": 0.3}]
    (run / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    argv = [
        "eval",
        str(tmp_path / "pixel"),
        "--trust-remote-code",
        "--tasks",
        "sts",
        "sts-multilingual",
        "--sts-dir",
        str(small_sts_dir),
        "--stsb-multi-dir",
        str(multi),
        "--plots",
        str(tmp_path / "plots"),
        "--run-dir",
        str(tmp_path / "run"),
        "--json",
    ]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result["sts-multilingual"]) == {"en", "de", "avg"} and "STSBenchmark" in result["sts"]
    names = sorted(path.split("/")[-1] for path in result["plots"])
    assert names == [
        "alignment_uniformity.png",
        "anisotropy.png",
        "rendered.png",
        "robustness.png",
        "training_curves.png",
    ]
    for path in result["plots"]:
        assert Image.open(path).size[0] > 100
    assert main(["eval", str(tmp_path / "pixel"), "--trust-remote-code", "--tasks", "sts-multilingual"]) == 2
    assert "needs --sts-dir" in capsys.readouterr().err
