"""Write the tables and the dev-curve plot of docs/results.md from the experiments' JSON lines.

    python experiments/report.py --results experiments/results --doc docs/results.md --plot docs/results_dev_curves.png

The tables replace everything between ``<!-- tables:start -->`` and ``<!-- tables:end -->`` in the doc; the prose
around them is written by hand. Seeds are compared at each method's selected learning rate (the best seed-0 STS-B
dev score of the grid). "Beyond seed noise" means the mean +- std intervals of the method and of the SimCSE
baseline do not overlap.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parent
sys.path.insert(0, str(EXPERIMENTS))

from methods import LEARNING_RATES, METHODS, SEEDS, grid_methods  # noqa: E402  (experiments/ is not a package)
from run_grid import best_learning_rate, read_rows  # noqa: E402

START, END = "<!-- tables:start -->", "<!-- tables:end -->"
BACKBONES = {
    "minilm": "all-MiniLM-L6-v2 (real weights, continued training)",
    "random": "random tiny encoder (2 x 128, trained from scratch)",
}


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def selected_rows(rows: list[dict], backbone: str, method: str) -> tuple[float, list[dict]]:
    learning_rate = best_learning_rate(rows, backbone, method)
    chosen = [
        row
        for row in rows
        if row["backbone"] == backbone and row["method"] == method and row["learning_rate"] == learning_rate
    ]
    return learning_rate, sorted(chosen, key=lambda row: row["seed"])


def verdict(mean: float, std: float, base_mean: float, base_std: float) -> str:
    if mean - std > base_mean + base_std:
        return "better"
    if mean + std < base_mean - base_std:
        return "worse"
    return "within noise"


def backbone_tables(rows: list[dict], backbone: str) -> str:
    methods = [method for method in grid_methods(backbone) if any(row["method"] == method for row in rows)]
    lines = [f"### {BACKBONES[backbone]}", ""]
    lines += [
        "| Method | lr | seeds | STS-B dev, selected checkpoint (mean +- std) | start | vs SimCSE | beyond seed "
        "noise? | steps | steps/s | s / run | modality share of fwd+bwd |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = selected_rows(rows, backbone, "simcse")[1] if "simcse" in methods else []
    base_mean, base_std = mean_std([row["dev_selected"] for row in base]) if base else (None, None)
    for method in methods:
        learning_rate, chosen = selected_rows(rows, backbone, method)
        mean, std = mean_std([row["dev_selected"] for row in chosen])
        starts = sorted({round(row["dev_start"], 2) for row in chosen})
        share = [row["modality_share"] for row in chosen if row["modality_share"] is not None]
        compare = "baseline" if method == "simcse" or base_mean is None else f"{mean - base_mean:+.2f}"
        if method == "simcse" or base_mean is None:
            noise = "-"
        elif min(len(chosen), len(base)) < len(SEEDS):  # no verdict before every seed of both has run
            noise = f"pending ({len(chosen)} of {len(SEEDS)} seeds run; SimCSE {len(base)})"
        else:
            noise = verdict(mean, std, base_mean, base_std)
        lines.append(
            f"| {METHODS[method]['label']} | {learning_rate:g} | {len(chosen)} | {mean:.2f} +- {std:.2f} | "
            f"{' / '.join(f'{start:.2f}' for start in starts)} | {compare} | {noise} | {chosen[0]['steps']} | "
            f"{statistics.median(row['steps_per_second'] for row in chosen):.2f} | "
            f"{statistics.median(row['wall_seconds'] for row in chosen):.0f} | "
            f"{f'{statistics.median(share):.0%}' if share and method not in ('simcse', 'macd') else '-'} |"
        )
    lines += ["", f"Learning-rate search (seed {SEEDS[0]}, STS-B dev of the selected checkpoint):", ""]
    rates = LEARNING_RATES[backbone]
    lines += ["| Method | " + " | ".join(f"lr {rate:g}" for rate in rates) + " |", "|---|" + "---|" * len(rates)]
    for method in methods:
        cells = []
        for rate in rates:
            found = [
                row["dev_selected"]
                for row in rows
                if row["method"] == method and row["seed"] == SEEDS[0] and row["learning_rate"] == rate
            ]
            cells.append(f"{found[0]:.2f}" if found else "-")
        lines.append(f"| {METHODS[method]['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def all_runs_table(rows: list[dict]) -> str:
    lines = [
        "| backbone | method | seed | lr | dev start | dev selected | best step | s | command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['backbone']} | {row['method']} | {row['seed']} | {row['learning_rate']:g} | "
            f"{row['dev_start']:.2f} | {row['dev_selected']:.2f} | "
            f"{row['best_step'] if row['best_step'] is not None else '-'} | {row['wall_seconds']:.0f} | "
            f"`{row['command']} --shared ../shared --results rerun.jsonl` |"
        )
    return "\n".join(lines)


def plot_curves(rows_by_backbone: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(rows_by_backbone), figsize=(6 * len(rows_by_backbone), 4.2), squeeze=False)
    for axis, (backbone, rows) in zip(axes[0], rows_by_backbone.items()):
        for method in grid_methods(backbone):
            if not any(row["method"] == method for row in rows):
                continue
            _, chosen = selected_rows(rows, backbone, method)
            # change from each run's own start: the backbones' and the pixel encoder's starts differ by tens of points
            curves = [
                [(0.0, 0.0)] + [(step / row["steps"], score - row["dev_start"]) for step, score in row["dev_curve"]]
                for row in chosen
            ]
            length = min(len(curve) for curve in curves)
            xs = [curves[0][index][0] for index in range(length)]
            ys = [statistics.fmean(curve[index][1] for curve in curves) for index in range(length)]
            axis.plot(xs, ys, marker="o", markersize=3, label=METHODS[method]["label"])
        axis.set_title(BACKBONES[backbone], fontsize=9)
        axis.set_xlabel("fraction of the run (0 = start)")
        axis.set_ylabel("STS-B dev minus start (points, seed mean)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--results", type=Path, default=EXPERIMENTS / "results", help="folder of <backbone>.jsonl and robustness.json"
    )
    parser.add_argument("--doc", type=Path, required=True, help="markdown page whose table section is rewritten")
    parser.add_argument("--plot", type=Path, required=True, help="PNG of the dev curves")
    args = parser.parse_args()

    rows_by_backbone = {backbone: read_rows(args.results / f"{backbone}.jsonl") for backbone in BACKBONES}
    rows_by_backbone = {backbone: rows for backbone, rows in rows_by_backbone.items() if rows}
    sections = [backbone_tables(rows, backbone) for backbone, rows in rows_by_backbone.items()]
    robustness = args.results / "robustness.json"
    if robustness.exists():
        from sbert_nonling.evaluation.robustness import format_robustness_table

        report = json.loads(robustness.read_text(encoding="utf-8"))
        sections.append(
            "### Robustness (STS-B dev; Pixel Linguist Table 1 layout)\n\n```text\n"
            + format_robustness_table(report)
            + "\n```"
        )
    sections.append("### Every run\n\n" + all_runs_table([row for rows in rows_by_backbone.values() for row in rows]))
    text = args.doc.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise ValueError(f"{args.doc} needs the markers {START} and {END} around its table section.")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    args.doc.write_text(head + START + "\n\n" + "\n\n".join(sections) + "\n\n" + END + tail, encoding="utf-8")
    plot_curves(rows_by_backbone, args.plot)


if __name__ == "__main__":
    main()
