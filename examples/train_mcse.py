"""MCSE with sbert-nonling: SimCSE on wiki sentences + grounding captions in their images (frozen image features).

Real run (GPU, Hub reachable; bert-base-uncased, torchvision ResNet-50 features):
    sbert-nonling features --image-dir flickr30k-images --encoder resnet50 --output flickr30k.safetensors
    python examples/train_mcse.py --text-file wiki1m_for_simcse.txt --captions-file results_20130124.token \
        --image-dir flickr30k-images --image-features flickr30k.safetensors --sts-dir STS
Offline smoke run here (Flickr8k photos, EfficientNet-Lite0 features extracted on the fly):
    python examples/train_mcse.py --tiny --max-steps 20 --text-file ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --captions-file ../shared/data/corpus/flickr8k/Flickr8k.token.txt --image-dir ../shared/data/images/flickr8k \
        --sts-dir ../shared/data/sts
"""

from __future__ import annotations

import argparse

from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import train_recipe

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--text-file", required=True, help="wiki sentences, one per line")
parser.add_argument("--captions-file", required=True, help="Flickr token file, CSV or JSONL of (image, caption)")
parser.add_argument("--image-dir", required=True)
parser.add_argument("--image-features", help="from `sbert-nonling features`; default: extracted now")
parser.add_argument("--sts-dir", required=True)
parser.add_argument("--output", default="runs/mcse")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int)
args = parser.parse_args()

# 1. Train: wiki batches get SimCSE; a caption batch every len(wiki) // len(captions) steps gets SimCSE + 0.01 x grounding
result = train_recipe(
    "mcse", args.output, text_file=args.text_file, captions_file=args.captions_file, image_dir=args.image_dir,
    image_features=args.image_features, sts_dir=args.sts_dir, tiny=args.tiny, max_steps=args.max_steps, overwrite=args.overwrite,
)

# 2. Before / after on the dev tasks; the projection heads stayed in the checkpoints, the model is plain
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
