"""Unsupervised SimCSE with sbert-nonling, step by step.

Real run (GPU, Hub reachable):
    python examples/train_simcse.py --text-file wiki1m_for_simcse.txt --sts-dir SentEval/data/downstream/STS
Offline smoke run on this repository's shared data:
    python examples/train_simcse.py --tiny --max-steps 20 \
        --text-file ../shared/data/corpus/wiki1m_for_simcse.first11913.txt --sts-dir ../shared/data/sts
"""

from __future__ import annotations

import argparse

from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import get_recipe, train_recipe

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--text-file", required=True)
parser.add_argument("--sts-dir", required=True)
parser.add_argument("--output", default="runs/simcse-unsup")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int)
args = parser.parse_args()

# 1. The recipe: the paper's hyper-parameters (BERT-base, batch 64, lr 3e-5, max length 32, tau 0.05, dev every 125 steps)
print(get_recipe("simcse-unsup", tiny=args.tiny))

# 2. Train with SentenceTransformerTrainer; the best checkpoint on STS-B dev is kept
result = train_recipe(
    "simcse-unsup", args.output, text_file=args.text_file, sts_dir=args.sts_dir, tiny=args.tiny, max_steps=args.max_steps,
    overwrite=args.overwrite,
)

# 3. Before / after on the dev tasks; result["export"] loads with plain SentenceTransformer(path)
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
print(result["export"])
