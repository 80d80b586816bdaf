"""benchmarks/gpu_check.py in its CPU mode (``--device cpu --quick``): the fields docs/benchmarks.md documents, every
family trained in fp32 and bf16 with finite losses and gradients and the first loss within tolerance of fp32's.
Timings are reported by the script, never asserted here."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
FAMILIES = {"simcse", "visualcse", "audiocse", "mcse", "macd", "multitask", "pixel-linguist"}


def test_gpu_check_runs_every_family_on_the_cpu(data_dir):
    command = [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--device", "cpu", "--quick", "--shared", str(data_dir.parent)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["benchmark"] == "gpu_check" and result["device"] == "cpu" and result["quick"] is True
    assert result["precisions"] == ["fp32", "bf16"] and "fp16" in result["skipped_precisions"]
    assert result["loss_tolerance"] == {"fp32": 0.0, "bf16": 5e-2, "fp16": 1e-2}
    assert set(result["families"]) == FAMILIES and result["met"] is True
    assert {(row["family"], row["precision"]) for row in result["rows"]} == {(f, p) for f in FAMILIES for p in ("fp32", "bf16")}
    for row in result["rows"]:
        assert row["losses_finite"] and row["grads_finite"] and row["finite"] and row["overflow_steps"] == 0, row
        assert row["loss_within_tolerance"] and row["loss_rel_diff"] <= row["tolerance"], row
        assert len(row["first_losses"]) == result["steps"] == 3 and row["finite_grad_steps"] >= 3, row
        assert row["steps_per_second"] > 0 and math.isfinite(row["x_plain_simcse"]), row
    assert set(result["plain_simcse_steps_per_second"]) == {"fp32", "bf16"}
    assert result["memory"]["status"] == "skipped" and result["ddp"]["status"] == "skipped"
    assert result["workers"] == 2 and "machine" in result
