"""How fast does PixelRenderer render? Sentences per second and time per batch of 256, at 64 and 529 patches.

Run: ``python benchmarks/render_throughput.py [--text-file FILE] [--sentences 4096] [--quick]``. The default text
file is the shared wiki1m sample (``$SBERT_NONLING_SHARED/data/corpus``, else ``../shared`` beside the repository).
Prints a table, then one JSON line with the figures, the machine and the library versions; its ``ratio`` is the
``preprocess()`` rate at 529 patches over the rate at 64 (informational). ``--quick``: 256 sentences (one batch), a
run of seconds that checks the code (the test suite runs it).
"""

from __future__ import annotations

import argparse
import statistics
import time
from importlib.metadata import version
from pathlib import Path

import cairocffi
import common
from pangocffi import ffi as pango_ffi
from pangocffi import pango

from sbert_nonling.modules.pixel_renderer import PixelRenderer

BATCH_SIZE = 256
#: ``--quick``: one batch.
QUICK = {"sentences": BATCH_SIZE}


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text-file", type=Path, default=common.WIKI_FILE)
    parser.add_argument("--sentences", type=int, default=4096, help=f"at least {BATCH_SIZE}, one batch")
    args = common.parse_arguments(parser, QUICK, argv)
    if args.sentences < BATCH_SIZE:
        parser.error(f"--sentences {args.sentences}: at least one batch of {BATCH_SIZE} is timed")
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
        **common.machine(),
        "pango": pango_ffi.string(pango.pango_version_string()).decode(),
        "cairo": cairocffi.cairo_version_string(),
        "pangocffi": version("pangocffi"),
        "cairocffi": version("cairocffi"),
    }
    common.emit(
        {
            "benchmark": "render_throughput",
            "ratio": results["529"]["preprocess_sentences_per_s"] / results["64"]["preprocess_sentences_per_s"],
            "goal": "informational (preprocess() sentences/s at 529 patches vs 64)",
            "met": None,
            "sentences": len(sentences),
            "results": results,
            "machine": machine,
        }
    )


if __name__ == "__main__":
    main()
