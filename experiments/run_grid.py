"""Run the experiment grid of one backbone, one ``run_one.py`` process per row, appending to a JSON-lines file.

    python experiments/run_grid.py --backbone random --shared ../shared --results experiments/results/random.jsonl

1. Learning-rate search: every method at every grid rate with seed 0 (a control at its treated method's chosen rate).
2. Seeds: every method at its best seed-0 rate (STS-B dev of the selected checkpoint) with the other seeds.
Rows already in the results file are skipped, so an interrupted grid continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parent
sys.path.insert(0, str(EXPERIMENTS))

from methods import LEARNING_RATES, SEEDS, grid_methods, rate_source  # noqa: E402  (experiments/ is not a package)

#: Rows whose trained model is kept for the robustness table.
KEEP_MODEL = {("minilm", "simcse"), ("minilm", "visualcse-supcon"), ("random", "pixel")}


def read_rows(results: Path) -> list[dict]:
    if not results.exists():
        return []
    return [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]


def best_learning_rate(rows: list[dict], backbone: str, method: str) -> float:
    """The grid rate whose seed-0 run scored highest on STS-B dev (the selection set)."""
    searched = [
        row for row in rows if row["backbone"] == backbone and row["method"] == method and row["seed"] == SEEDS[0]
    ]
    if not searched:
        raise ValueError(f"No seed-{SEEDS[0]} rows of {method} on {backbone}: run the learning-rate search first.")
    return max(searched, key=lambda row: row["dev_selected"])["learning_rate"]


def search_rates(rows: list[dict], backbone: str, method: str) -> tuple[float, ...]:
    """The learning rates step 1 tries with seed 0: the backbone's grid, or for a control (or a speed variant) the rate
    its treated method chose (so the two differ in the controlled setting only; the treated method must have been
    searched)."""
    treated = rate_source(method)
    return (best_learning_rate(rows, backbone, treated),) if treated else LEARNING_RATES[backbone]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", required=True, choices=sorted(LEARNING_RATES))
    parser.add_argument(
        "--shared",
        type=Path,
        default=Path(os.environ.get("SBERT_NONLING_SHARED", "../shared")),
        help="the shared data folder",
    )
    parser.add_argument(
        "--work-dir", type=Path, default=Path("runs/experiments"), help="run folders and prepared data"
    )
    parser.add_argument("--results", type=Path, required=True, help="JSON-lines file rows are appended to")
    parser.add_argument("--methods", nargs="*", help="only these methods (default: all of the backbone)")
    parser.add_argument("--search-only", action="store_true", help="only the seed-0 learning-rate search (step 1)")
    args = parser.parse_args()
    methods = args.methods or grid_methods(args.backbone)

    def run(method: str, seed: int, learning_rate: float) -> None:
        done = {
            (row["method"], row["seed"], row["learning_rate"])
            for row in read_rows(args.results)
            if row["backbone"] == args.backbone
        }
        if (method, seed, learning_rate) in done:
            return
        command = [
            sys.executable,
            str(EXPERIMENTS / "run_one.py"),
            "--method",
            method,
            "--backbone",
            args.backbone,
            "--seed",
            str(seed),
            "--learning-rate",
            f"{learning_rate:g}",
            "--shared",
            str(args.shared),
            "--work-dir",
            str(args.work_dir),
            "--results",
            str(args.results),
        ]
        if seed == SEEDS[0] and (args.backbone, method) in KEEP_MODEL:
            command.append("--keep-model")
        subprocess.run(command, check=True)

    for method in methods:
        for learning_rate in search_rates(read_rows(args.results), args.backbone, method):
            run(method, SEEDS[0], learning_rate)
    if args.search_only:
        return
    for method in methods:
        learning_rate = best_learning_rate(read_rows(args.results), args.backbone, method)
        for seed in SEEDS[1:]:
            run(method, seed, learning_rate)


if __name__ == "__main__":
    main()
