"""Run every benchmark (issue 7's seven, then issue 20's step cost) with small defaults (15-20 minutes on 2 CPU cores)
and summarise the ratios.

Run: ``python benchmarks/run_all.py [--only text_path_overhead,precision] [--output results.jsonl] [--quick]``. Each
script's own output is streamed; the summary table lists ratio, goal and whether it was met, then one JSON line holds
every script's final JSON object and the wall time. ``--quick`` runs each script in its quick mode instead (a run of
seconds that checks the code, not the figures; the test suite runs it). Bigger settings: run a script directly with
its flags (``--help``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: In issue 7's order (then issue 20's), with the arguments of the small run (memory: a mini-size encoder here; the
#: BERT-base figures in docs/benchmarks.md come from ``python benchmarks/memory.py``).
BENCHMARKS = {
    "text_path_overhead": ["--rounds", "4", "--steps", "4", "--encode-sentences", "512"],
    "framework_overhead": ["--rounds", "2", "--steps", "3"],
    "data_share": ["--batch-size", "2", "--rounds", "1", "--loop-steps", "2"],
    "precision": ["--rounds", "2", "--steps", "2", "--curve-steps", "100"],
    "memory": ["--size", "mini"],
    "scaling": ["--rounds", "1"],
    "profile_steps": ["--rounds", "2", "--steps", "1"],
    "modality_step_cost": ["--sizes", "mini", "--rounds", "2"],
}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks (see the module docstring); 1 if any of them failed, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHMARKS))
    parser.add_argument("--output", type=Path, default=None, help="also write each final JSON line to this file")
    parser.add_argument("--quick", action="store_true", help="run each script with --quick instead of its small run")
    args = parser.parse_args(argv)
    results, started = {}, time.perf_counter()
    for name in args.only.split(","):
        print(f"=== {name}", flush=True)
        begin = time.perf_counter()
        arguments = ["--quick"] if args.quick else BENCHMARKS[name]
        process = subprocess.run(
            [sys.executable, str(HERE / f"{name}.py"), *arguments], capture_output=True, text=True, check=False
        )
        lines = [line for line in process.stdout.splitlines() if line.strip()]
        print("\n".join(lines), flush=True)
        if process.returncode or not lines:
            print(process.stderr[-3000:], file=sys.stderr)
            results[name] = {"benchmark": name, "error": process.returncode}
            continue
        results[name] = json.loads(lines[-1])
        results[name]["wall_s"] = time.perf_counter() - begin
    wall = time.perf_counter() - started
    print(f"=== summary ({wall:.0f} s)")
    width = max(map(len, results))
    for name, result in results.items():
        ratio = result.get("ratio")
        shown = f"{ratio:.3f}" if isinstance(ratio, float) else "error"
        print(
            f"{name:>{width}}  ratio {shown:>8}  goal {result.get('goal', '')!s:<50} met {result.get('met')}  "
            f"({result.get('wall_s', 0):.0f} s)"
        )
    if args.output:
        args.output.write_text("\n".join(json.dumps(result) for result in results.values()) + "\n", encoding="utf-8")
    ok = all("error" not in result for result in results.values())
    print(json.dumps({"benchmark": "run_all", "quick": args.quick, "wall_s": wall, "ok": ok, "results": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
