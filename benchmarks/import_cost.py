"""Cost of ``import sbert_nonling``: seconds and peak memory in fresh processes, this checkout against a git revision.

Run: ``python benchmarks/import_cost.py --before REV [--repetitions 9]``. The package of revision ``REV`` is
extracted with ``git archive`` into a temporary folder; each repetition starts one fresh Python for each side (the
order alternates: before, after, then after, before), imports the package from its own folder and reports the
import's wall time, the process's peak resident memory (``VmHWM`` of ``/proc/self/status``: unlike ``ru_maxrss``,
it does not carry over the size of the parent that started the process), the number of modules loaded and which
optional or heavy libraries were imported. Linux only. Medians per side and the ratio after / before go on the last
line. ``--quick``: one repetition against ``HEAD`` (any clone has it), a run of seconds that checks the code (the test
suite runs it).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from common import REPO_DIR, emit, median, parse_arguments, print_table

#: Libraries whose presence after ``import sbert_nonling`` is reported.
WATCHED = ("pangocffi", "pangocairocffi", "cairocffi", "matplotlib", "mteb", "torchvision", "torchaudio", "datasets")
CHILD = f"""
import json, sys, time
start = time.perf_counter()
import sbert_nonling
seconds = time.perf_counter() - start
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({{
    "seconds": seconds,
    "peak_rss_mb": int(status["VmHWM"].split()[0]) / 1024,
    "modules": len(sys.modules),
    "loaded": [name for name in {WATCHED!r} if name in sys.modules],
    "file": sbert_nonling.__file__,
}}))
"""
#: ``--quick``: one repetition against the last commit.
QUICK = {"before": "HEAD", "repetitions": 1}


def extract_package(revision: str, folder: Path) -> Path:
    """Write ``sbert_nonling/`` as of ``revision`` into ``folder`` and return the folder."""
    archive = subprocess.run(
        ["git", "-C", str(REPO_DIR), "archive", "--format=tar", revision, "sbert_nonling"],
        capture_output=True,
        check=True,
    ).stdout
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def import_once(package_root: Path, work_dir: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    output = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, cwd=work_dir, capture_output=True, text=True, check=True
    )
    result = json.loads(output.stdout.strip().splitlines()[-1])
    expected = package_root / "sbert_nonling" / "__init__.py"
    if Path(result["file"]).resolve() != expected.resolve():
        raise RuntimeError(f"imported {result['file']}, not {expected}: another sbert_nonling shadows the candidate")
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="git revision to compare with, e.g. the merge base (required)")
    parser.add_argument("--repetitions", type=int, default=9)
    args = parse_arguments(parser, QUICK, argv)
    if args.before is None:
        parser.error("--before REV is required (or --quick, which compares with HEAD)")
    with tempfile.TemporaryDirectory() as temporary:
        before_root = extract_package(args.before, Path(temporary) / "before")
        work_dir = Path(temporary) / "cwd"
        work_dir.mkdir()
        roots = {"before": before_root, "after": REPO_DIR}
        runs: dict[str, list[dict[str, object]]] = {name: [] for name in roots}
        for repetition in range(args.repetitions):
            for name in list(roots) if repetition % 2 == 0 else list(roots)[::-1]:
                runs[name].append(import_once(roots[name], work_dir))
    summary = {
        name: {
            "seconds": median([run["seconds"] for run in results]),
            "peak_rss_mb": median([run["peak_rss_mb"] for run in results]),
            "modules": median([run["modules"] for run in results]),
            "loaded": results[-1]["loaded"],
        }
        for name, results in runs.items()
    }
    print_table(
        ["side", "import s (median)", "peak RSS MB (median)", "modules", "optional / heavy libraries loaded"],
        [
            [name, s["seconds"], s["peak_rss_mb"], s["modules"], ",".join(s["loaded"]) or "-"]
            for name, s in summary.items()
        ],
    )
    ratio = summary["after"]["seconds"] / summary["before"]["seconds"]
    emit(
        {
            "benchmark": "import_cost",
            "before": args.before,
            "repetitions": args.repetitions,
            "ratio": ratio,
            "memory_ratio": summary["after"]["peak_rss_mb"] / summary["before"]["peak_rss_mb"],
            "goal": "import sbert_nonling loads no Pango, Cairo, matplotlib or mteb",
            "met": not {"pangocffi", "pangocairocffi", "cairocffi", "matplotlib", "mteb"}
            & set(summary["after"]["loaded"]),
            "summary": summary,
            "samples": {
                name: [[run["seconds"], run["peak_rss_mb"]] for run in results] for name, results in runs.items()
            },
        }
    )


if __name__ == "__main__":
    main()
