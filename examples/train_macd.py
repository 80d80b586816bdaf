"""MACD (Cui et al., 2020): a sentence encoder trained on captions only, grounded in their images' regions, and
anchored to a frozen copy of itself so that it does not forget, as a plain sentence-transformers script.

Each caption batch gets a symmetric caption <-> image contrastive term (linear heads to 768, cosine x 10) plus the
DAMSM word <-> region term on the 7 x 7 ResNet-50 grid (MultimodalAlignLoss), wrapped in DistillAnchorLoss (KL of the
in-batch similarities at distillation temperature 2, weight 5, and token cosine to the frozen starting model, weight
1).

Usage:
    python examples/train_macd.py                                       # bert-base-uncased on Flickr30k (GPU)
    python examples/train_macd.py --model sentence-transformers/all-MiniLM-L6-v2 --captions my.csv --image-dir imgs/
    python examples/train_macd.py --tiny --captions ../shared/data/corpus/flickr8k/Flickr8k.token.txt \
        --image-dir ../shared/data/images/flickr8k --sts-dir ../shared/data/sts --max-steps 20   # offline
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling import DistillAnchorLoss, MultimodalAlignLoss, export_text_model
from sbert_nonling.data import FrozenImageEncoder, caption_feature_dataset, load_caption_pairs
from sbert_nonling.data.image_features import extract_image_features
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_sentence_model, build_tiny_encoder
from sbert_nonling.modules.encoder_families import learned_position_embeddings
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.arguments import SELECTION_METRIC

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="bert-base-uncased", help="encoder or sentence-transformers model to train")
parser.add_argument(
    "--captions",
    default="nlphuji/flickr30k?split=test&revision=refs/convert/parquet",
    help="image-caption pairs: a Hub dataset, or a Flickr token file / CSV / JSONL with --image-dir",
)
parser.add_argument("--image-dir", help="the images a local captions file names")
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/macd")
parser.add_argument(
    "--tiny", action="store_true", help="offline: small random encoder, EfficientNet-Lite0 regions, 40 photos"
)
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model")
args = parser.parse_args()
output = Path(args.output)

# 1. Every caption of every image, and the images' region grids from a frozen CNN (7 x 7 x 2048 for ResNet-50)
pairs, images = load_caption_pairs(args.captions, args.image_dir)
photos = sorted(images)[: 40 if args.tiny else None]
kept = set(photos)
pairs = [(photo, caption) for photo, caption in pairs if photo in kept]
image_encoder = FrozenImageEncoder.efficientnet_lite0() if args.tiny else FrozenImageEncoder.resnet50()
regions = extract_image_features([images[photo] for photo in photos], image_encoder, regions=True)["regions"]
train_dataset = caption_feature_dataset(pairs, photos, regions, one_caption_per_image=False)

# 2. The model; MACD keeps the position embeddings frozen
model = build_sentence_model(
    str(build_tiny_encoder(output / "tiny-encoder", [c for _, c in pairs])) if args.tiny else args.model
)
positions = learned_position_embeddings(model[0].encoder.auto_model)
if positions is not None:
    positions.requires_grad_(False)

# 3. Grounding (global + word-region terms) anchored to the starting model (the teacher: a frozen copy taken now)
grounding = MultimodalAlignLoss(
    model,
    image_dimension=regions.shape[-1],
    grounding_direction="symmetric",
    grounding_temperature=0.1,
    projection_dimension=768,
    projection_head="linear",
    grounding_weight=1.0,
    local_weight=1.0,
)
loss = DistillAnchorLoss(
    model, base_loss=grounding, anchor_kl_weight=5.0, anchor_cosine_weight=1.0, anchor_distillation_temperature=2.0
)

# 4. lr 1e-4 with 10 % warmup, batch 64 x 8 accumulation, 10 epochs; the best STS-B dev checkpoint is kept
training_args = SentenceTransformerTrainingArguments(
    output_dir=str(output / "checkpoints"),
    num_train_epochs=10,
    max_steps=args.max_steps,
    per_device_train_batch_size=32 if args.tiny else 64,
    gradient_accumulation_steps=1 if args.tiny else 8,
    learning_rate=1e-4,
    warmup_steps=0.1,
    eval_strategy="steps",
    eval_steps=25 if args.tiny else 125,
    save_steps=25 if args.tiny else 125,
    load_best_model_at_end=True,
    metric_for_best_model=SELECTION_METRIC,
    report_to="none",
)
trainer = NonLinguisticTrainer(
    model=model, args=training_args, train_dataset=train_dataset, loss=loss, evaluator=sts_dev_evaluator(args.sts_dir)
)
trainer.train()

# 5. Score, save (heads and teacher stay out of the model), export, publish
print(f"STS-B dev after training: {100 * trainer.evaluator(model)[trainer.evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
export = export_text_model(model, output / "export")
print(f"saved {output / 'model'} and {export}")
if args.push_to_hub:
    SentenceTransformer(str(export)).push_to_hub(args.push_to_hub)
