"""The robustness table (Pixel Linguist Table 1 layout) of the experiments: STS-B dev change and representation
shift under every perturbation, for the MiniLM start, its SimCSE and VisualCSE runs and the pixel route.

    python experiments/robustness.py --shared ../shared --work-dir runs/experiments \
        --results experiments/results --output experiments/results/robustness.json

The trained models are the seed-0 runs at each method's selected learning rate (``run_grid.py`` keeps them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parent
sys.path.insert(0, str(EXPERIMENTS))

from methods import MAX_SEQ_LENGTH  # noqa: E402
from run_grid import best_learning_rate, read_rows  # noqa: E402  (experiments/ is not a package)
from run_one import minilm_path  # noqa: E402

#: (label, backbone, method) of the trained rows; the MiniLM start is added first.
ROWS = (
    ("MiniLM + SimCSE", "minilm", "simcse"),
    ("MiniLM + VisualCSE", "minilm", "visualcse-supcon"),
    ("Pixel route", "random", "pixel"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shared",
        type=Path,
        default=Path(os.environ.get("SBERT_NONLING_SHARED", "../shared")),
        help="the shared data folder",
    )
    parser.add_argument("--work-dir", type=Path, default=Path("runs/experiments"), help="the grid's run folders")
    parser.add_argument("--results", type=Path, default=EXPERIMENTS / "results", help="folder of <backbone>.jsonl")
    parser.add_argument("--output", type=Path, required=True, help="JSON report to write")
    args = parser.parse_args()

    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    from sbert_nonling.evaluation.robustness import format_robustness_table, robustness_report
    from sbert_nonling.evaluation.sts_data import load_sts_dir

    start = SentenceTransformer(minilm_path())
    start.max_seq_length = MAX_SEQ_LENGTH  # as in training, so "start" differs from the runs only by training
    models = {"MiniLM (start)": start}
    for label, backbone, method in ROWS:
        learning_rate = best_learning_rate(read_rows(args.results / f"{backbone}.jsonl"), backbone, method)
        folder = args.work_dir / "runs" / backbone / f"{method}-lr{learning_rate:g}-seed0" / "model"
        if not folder.is_dir():
            raise ValueError(f"{folder} is missing: run_grid.py keeps the seed-0 models of {method} on {backbone}.")
        models[f"{label} (lr {learning_rate:g})"] = SentenceTransformer(str(folder), trust_remote_code=True)
    task = load_sts_dir(args.shared / "data/sts", "dev", tasks=("STSBenchmark",))[0]
    report = robustness_report(models, task)
    print(format_robustness_table(report))
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
