"""MACD with sbert-nonling: captions grounded in images (global + word-region terms), anchored to the starting model.

Real run (GPU, Hub reachable; bert-base-uncased, ResNet-50 7 x 7 region features):
    sbert-nonling features --image-dir flickr30k-images --encoder resnet50 --regions --output flickr30k-regions.safetensors
    python examples/train_macd.py --captions-file results_20130124.token --image-dir flickr30k-images \
        --image-features flickr30k-regions.safetensors --sts-dir STS
Offline smoke run here:
    python examples/train_macd.py --tiny --max-steps 10 --captions-file ../shared/data/corpus/flickr8k/Flickr8k.token.txt \
        --image-dir ../shared/data/images/flickr8k --sts-dir ../shared/data/sts
"""

from __future__ import annotations

import argparse

from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import get_recipe, train_recipe

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--captions-file", required=True)
parser.add_argument("--image-dir", required=True)
parser.add_argument("--image-features", help="with region grids (--regions); default: extracted now")
parser.add_argument("--sts-dir", required=True)
parser.add_argument("--no-local", action="store_true", help="drop the word-region term (the paper's '-local' ablation)")
parser.add_argument("--output", default="runs/macd")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int)
args = parser.parse_args()

# 1. The recipe: symmetric global loss (cosine x 10), DAMSM local term, KL (T = 2, x5) + token-cosine anchor
overrides = {"local_weight": 0.0} if args.no_local else {}
print({key: value for key, value in get_recipe("macd", tiny=args.tiny, overrides=overrides).items() if "anchor" in key or "grounding" in key})

# 2. Train on captions only; the frozen teacher is never saved with the model
result = train_recipe(
    "macd", args.output, captions_file=args.captions_file, image_dir=args.image_dir, image_features=args.image_features,
    sts_dir=args.sts_dir, tiny=args.tiny, max_steps=args.max_steps, overwrite=args.overwrite, overrides=overrides,
)

# 3. Before / after on the dev tasks
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
