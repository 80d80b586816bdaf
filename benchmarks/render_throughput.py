"""How fast does PixelRenderer render? Sentences per second and time per batch of 256, at 64 and 529 patches.

Run: ``python benchmarks/render_throughput.py [--text-file FILE] [--sentences 4096]``. The default text file is
the shared wiki1m sample (``$SBERT_NONLING_SHARED/data/corpus``, else ``../shared`` beside the repository). Prints a
table, then one JSON line with the figures, the machine and the library versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from importlib.metadata import version
from pathlib import Path

import cairocffi
from pangocffi import ffi as pango_ffi
from pangocffi import pango

from sbert_nonling.modules.pixel_renderer import PixelRenderer

BATCH_SIZE = 256
SHARED_DIR = Path(os.environ.get("SBERT_NONLING_SHARED", Path(__file__).resolve().parents[1] / ".." / "shared"))
DEFAULT_TEXT_FILE = SHARED_DIR / "data" / "corpus" / "wiki1m_for_simcse.first11913.txt"


def read_sentences(path: Path, count: int) -> list[str]:
    sentences = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(sentences) < count:
        sentences = (sentences * (count // len(sentences) + 1))[:count]
    return sentences[:count]


def measure(renderer: PixelRenderer, sentences: list[str]) -> dict[str, float]:
    # 1. Warm up the glyph caches with one batch.
    renderer.preprocess(sentences[:BATCH_SIZE])
    # 2. render(): uint8 strips only.
    start = time.perf_counter()
    for sentence in sentences:
        renderer.render(sentence)
    render_seconds = time.perf_counter() - start
    # 3. preprocess(): batches of 256 up to the float32 (B, 3, 16, W) tensors the encoder reads.
    batch_seconds = []
    for offset in range(0, len(sentences) - BATCH_SIZE + 1, BATCH_SIZE):
        batch = sentences[offset : offset + BATCH_SIZE]
        start = time.perf_counter()
        renderer.preprocess(batch)
        batch_seconds.append(time.perf_counter() - start)
    batch_median = statistics.median(batch_seconds)
    return {
        "render_sentences_per_s": len(sentences) / render_seconds,
        "preprocess_sentences_per_s": BATCH_SIZE / batch_median,
        "preprocess_ms_per_batch_256": batch_median * 1000,
        "batches": len(batch_seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text-file", type=Path, default=DEFAULT_TEXT_FILE)
    parser.add_argument("--sentences", type=int, default=4096)
    args = parser.parse_args()
    sentences = read_sentences(args.text_file, args.sentences)

    results = {}
    for max_patches in (64, 529):
        results[str(max_patches)] = measure(PixelRenderer(max_patches=max_patches), sentences)

    print(
        f"{len(sentences)} sentences from {args.text_file.name}, mean {statistics.mean(map(len, sentences)):.0f} chars"
    )
    print(f"{'patches':>8} {'render() sent/s':>16} {'preprocess sent/s':>18} {'ms / batch of 256':>18}")
    for max_patches, figures in results.items():
        print(
            f"{max_patches:>8} {figures['render_sentences_per_s']:>16.0f} "
            f"{figures['preprocess_sentences_per_s']:>18.0f} {figures['preprocess_ms_per_batch_256']:>18.1f}"
        )
    machine = {
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "pango": pango_ffi.string(pango.pango_version_string()).decode(),
        "cairo": cairocffi.cairo_version_string(),
        "pangocffi": version("pangocffi"),
        "cairocffi": version("cairocffi"),
        "torch": version("torch"),
    }
    print(
        json.dumps(
            {"benchmark": "render_throughput", "sentences": len(sentences), "results": results, "machine": machine}
        )
    )


if __name__ == "__main__":
    main()
