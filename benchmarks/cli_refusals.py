"""Seconds until ``sbert-nonling`` refuses an argument mistake (issue 32, finding 9): each mistake of the issue run as
a fresh ``python -m sbert_nonling.cli`` process, timed from its start to its exit (what a user waits for).

Run: ``python benchmarks/cli_refusals.py [--repetitions 5] [--before REV]``. Each repetition runs every case once;
with ``--before REV`` the package of revision ``REV`` (``git archive``) runs each case too, alternating which side
goes first. Every case of this checkout must exit with status 2 (the old one may fail otherwise); medians per case
and side go on the last line, with the goal that every refusal of this checkout takes under a second. ``--quick``: one
repetition, against ``HEAD`` (any clone has it), a run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO_DIR, emit, median, parse_arguments, print_table
from import_cost import extract_package

#: The argument mistakes: name -> arguments, run in a folder that holds an empty ``sts/`` folder and nothing else.
CASES: dict[str, list[str]] = {
    "misspelled recipe": ["train", "simcse-unsupp", "--tiny", "--output", "run"],
    "--set without =": ["train", "simcse-unsup", "--tiny", "--output", "run", "--set", "learning_rate"],
    "unknown --set key": ["train", "visualcse", "--tiny", "--output", "run", "--set", "learnin_rate=1e-5"],
    "mistyped --set value": ["train", "visualcse", "--tiny", "--output", "run", "--set", "learning_rate=abc"],
    "missing --text-file": ["train", "simcse-unsup", "--tiny", "--output", "run", "--text-file", "missing.txt"],
    "missing --image-dir": ["train", "visualcse", "--tiny", "--output", "run", "--image-dir", "missing"],
    "--tiny with --model": ["train", "simcse-unsup", "--tiny", "--model", "bert-base-uncased", "--output", "run"],
    "eval: missing model folder": ["eval", "runs/missing/model", "--sts-dir", "sts"],
    "eval: missing --sts-dir": ["eval", "sentence-transformers/all-MiniLM-L6-v2", "--sts-dir", "missing"],
    "robustness: missing model folder": ["robustness", "./missing", "--sts-dir", "sts"],
    "export: missing model folder": ["export", "./missing", "export"],
    "features: missing --image-dir": ["features", "--image-dir", "missing", "--output", "features.safetensors"],
}
#: ``--quick``: one repetition, beside the last commit.
QUICK = {"repetitions": 1, "before": "HEAD"}


def refuse_once(package_root: Path, argv: list[str], work_dir: Path) -> tuple[float, int, str]:
    """Seconds, exit status and the last line of standard error of one ``sbert-nonling`` process."""
    env = {**os.environ, "PYTHONPATH": str(package_root), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "sbert_nonling.cli", *argv], env=env, cwd=work_dir, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    return seconds, run.returncode, (run.stderr.strip().splitlines() or [""])[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--before", help="git revision to time side by side, e.g. the merge base")
    args = parse_arguments(parser, QUICK, argv)
    with tempfile.TemporaryDirectory() as temporary:
        roots = {"after": REPO_DIR}
        if args.before:
            roots["before"] = extract_package(args.before, Path(temporary) / "before")
        work_dir = Path(temporary) / "cwd"
        (work_dir / "sts").mkdir(parents=True)
        seconds: dict[str, dict[str, list[float]]] = {side: {case: [] for case in CASES} for side in roots}
        messages: dict[str, str] = {}
        for repetition in range(args.repetitions):
            for side in list(roots) if repetition % 2 == 0 else list(roots)[::-1]:
                for case, argv in CASES.items():
                    elapsed, status, message = refuse_once(roots[side], argv, work_dir)
                    seconds[side][case].append(elapsed)
                    if side == "after":
                        if status != 2:
                            raise RuntimeError(f"{case}: exit status {status}, expected 2: {message}")
                        messages[case] = message
    medians = {side: {case: median(values) for case, values in cases.items()} for side, cases in seconds.items()}
    header = ["mistake", *(f"{side} s (median)" for side in roots), "message (this checkout)"]
    print_table(header, [[case, *(medians[side][case] for side in roots), messages[case][:90]] for case in CASES])
    slowest = max(medians["after"].values())
    result: dict[str, object] = {
        "benchmark": "cli_refusals",
        "repetitions": args.repetitions,
        "goal": "every argument mistake refused in under 1 s",
        "met": slowest < 1.0,
        "slowest_seconds": slowest,
        "medians": medians,
    }
    if args.before:
        result.update(before=args.before, ratio=slowest / max(medians["before"].values()))
    emit(result)


if __name__ == "__main__":
    main()
