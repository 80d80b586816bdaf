"""Pixel Linguist with sbert-nonling: PIXEL reads rendered text; visual -> topical -> reasoning alignment.

Real run (GPU, Hub reachable; Team-PIXEL/pixel-base, wiki1m, all-NLI entailment pairs):
    python examples/train_pixel_linguist.py --text-file wiki1m_for_simcse.txt --nli-file nli_for_simcse.csv \
        --sts-dir STS --stsb-multi-dir stsb_multi_mt
    (add --leapfrog 2 for the cross-lingual iterations on the stsb_multi_mt train translations)
Offline smoke run here (a tiny random PIXEL-architecture encoder, a few steps per stage):
    python examples/train_pixel_linguist.py --tiny --max-steps 10 \
        --text-file ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --nli-file ../shared/data/corpus/snli_devtest_triplets.csv --sts-dir ../shared/data/sts \
        --stsb-multi-dir ../shared/data/stsb_multi
"""

from __future__ import annotations

import argparse

from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import train_recipe

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--text-file", required=True, help="sentences / documents, one per line (visual and topical stages)")
parser.add_argument("--nli-file", required=True, help="NLI triplets CSV; the (premise, entailment) pairs are used")
parser.add_argument("--sts-dir", required=True)
parser.add_argument("--stsb-multi-dir", help="stsb_multi_mt files: multilingual STS-B dev, parallel pairs")
parser.add_argument("--leapfrog", type=int, default=0, help="cross-lingual leapfrogging iterations (needs --stsb-multi-dir)")
parser.add_argument("--output", default="runs/pixel-linguist")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int, help="cap on the steps of every stage run")
args = parser.parse_args()

# 1. Train the curriculum: one visual run per perturbation set, averaged; then spans; then NLI entailment pairs
result = train_recipe(
    "pixel-linguist", args.output, text_file=args.text_file, nli_file=args.nli_file, sts_dir=args.sts_dir,
    stsb_multi_dir=args.stsb_multi_dir, tiny=args.tiny, max_steps=args.max_steps, overwrite=args.overwrite,
    overrides={"leapfrog_iterations": args.leapfrog},
)

# 2. STS-B dev after each stage, then before / after (English and, if given, the multilingual dev sets)
for stage in result["stages"]:
    if "dev" in stage:
        print(f"{stage['name']:<40} STS-B dev {stage['dev']['STSBenchmark']:.2f}")
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
if result["multilingual_after"]:
    print(format_sts_table({"before": result["multilingual_before"], "after": result["multilingual_after"]}))

# 3. The saved model reads text as pixels:
#    SentenceTransformer(result["model"], trust_remote_code=True).encode(["A man is playing a guitar."])
print(f"model: {result['model']}")
