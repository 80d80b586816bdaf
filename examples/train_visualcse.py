"""VisualCSE with sbert-nonling: SimCSE on text + SupCon on unpaired images, one shared encoder.

Real run (GPU, Hub reachable; bert-base-uncased + google/vit-base-patch16-224-in21k):
    python examples/train_visualcse.py --text-file wiki1m_for_simcse.txt --image-dir imagenet60/train --sts-dir STS
Offline smoke run here:
    python examples/train_visualcse.py --tiny --max-steps 20 --text-file ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --image-dir ../shared/data/images/cifar10/train --sts-dir ../shared/data/sts
"""

from __future__ import annotations

import argparse

from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import get_recipe, train_recipe

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--recipe", default="visualcse", choices=["visualcse", "visualcse-roberta-base"])
parser.add_argument("--text-file", required=True)
parser.add_argument("--image-dir", required=True, help="one sub-folder per class")
parser.add_argument("--sts-dir", required=True)
parser.add_argument("--scheme", choices=["alternating", "joint"], default="alternating")
parser.add_argument("--output", default="runs/visualcse")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int)
args = parser.parse_args()

# 1. The recipe: the paper's row (BERT-base: text bs 64 / lr 3e-5, images bs 48 / lr 1e-6 with their own AdamW)
print(get_recipe(args.recipe, tiny=args.tiny, overrides={"scheme": args.scheme}))

# 2. Train: every step an image batch (own optimizer) then a text batch; the best STS-B dev checkpoint is kept
result = train_recipe(
    args.recipe, args.output, text_file=args.text_file, image_dir=args.image_dir, sts_dir=args.sts_dir,
    tiny=args.tiny, max_steps=args.max_steps, overwrite=args.overwrite, overrides={"scheme": args.scheme},
)

# 3. Before / after; result["model"] also encodes images (trust_remote_code=True), result["export"] is plain text
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
