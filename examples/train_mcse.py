"""MCSE (Zhang et al., 2022): SimCSE on sentences plus, on interleaved caption batches, SimCSE + a caption -> image
contrastive term against frozen image features, as a plain sentence-transformers script.

The grounding term (MultimodalAlignLoss, weight 0.01) projects sentence embeddings and frozen ResNet-50 image vectors
into a shared 256-d space with training-only Linear + Tanh heads; the heads live in the loss (checkpointed by
NonLinguisticTrainer), never in the saved model.

Usage:
    python examples/train_mcse.py                                       # bert-base-uncased, wiki1m + Flickr30k (GPU)
    python examples/train_mcse.py --captions my_captions.csv --image-dir my_images/       # local image,caption pairs
    python examples/train_mcse.py --tiny --text ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --captions ../shared/data/corpus/flickr8k/Flickr8k.token.txt --image-dir ../shared/data/images/flickr8k \
        --sts-dir ../shared/data/sts --max-steps 20                     # offline: EfficientNet-Lite0 features
"""

from __future__ import annotations

import argparse
from pathlib import Path

from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling import MultimodalAlignLoss, SimCSELoss, export_text_model
from sbert_nonling.data import (
    FrozenImageEncoder,
    caption_feature_dataset,
    load_caption_pairs,
    read_sentences,
    sentence_pairs_dataset,
)
from sbert_nonling.data.image_features import extract_image_features
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_sentence_model, build_tiny_encoder
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.arguments import SELECTION_METRIC
from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="bert-base-uncased", help="encoder or sentence-transformers model to train")
parser.add_argument(
    "--text", default="princeton-nlp/datasets-for-simcse?data_files=wiki1m_for_simcse.txt", help="sentences"
)
parser.add_argument(
    "--captions",
    default="nlphuji/flickr30k?split=test&revision=refs/convert/parquet",
    help="image-caption pairs: a Hub dataset, or a Flickr token file / CSV / JSONL with --image-dir",
)
parser.add_argument("--image-dir", help="the images a local captions file names")
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/mcse")
parser.add_argument("--tiny", action="store_true", help="offline: small random encoder, EfficientNet-Lite0, 40 photos")
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model")
args = parser.parse_args()
output = Path(args.output)

# 1. Captions and their images' frozen features (ResNet-50 global vectors, 2048-d; EfficientNet-Lite0 1280-d offline)
pairs, images = load_caption_pairs(args.captions, args.image_dir)
names = sorted(images)[: 40 if args.tiny else None]
kept = set(names)
pairs = [pair for pair in pairs if pair[0] in kept]
image_encoder = FrozenImageEncoder.efficientnet_lite0() if args.tiny else FrozenImageEncoder.resnet50()
features = extract_image_features([images[name] for name in names], image_encoder)["global"]
captions = caption_feature_dataset(pairs, names, features)  # one caption per image, twice (dropout views) + features

# 2. Sentences for SimCSE, and the model (text route only: images never enter the encoder in MCSE)
sentences = read_sentences(args.text)
model = build_sentence_model(str(build_tiny_encoder(output / "tiny-encoder", sentences)) if args.tiny else args.model)

# 3. Losses: SimCSE on wiki batches; SimCSE + 0.01 x grounding (tau' 0.05, heads to 256) on caption batches
simcse = SimCSELoss(model, temperature=0.05)
grounding = MultimodalAlignLoss(
    model,
    image_dimension=features.shape[1],
    text_loss=simcse,
    weight=0.01,
    direction="text_to_image",
    temperature=0.05,
    projection_dimension=256,
    projection_head="mlp",
)

# 4. A caption batch after every len(text) // len(captions) text batches, as MCSE mixes them
training_args = SentenceTransformerTrainingArguments(
    output_dir=str(output / "checkpoints"),
    num_train_epochs=3,
    max_steps=args.max_steps,
    per_device_train_batch_size=64,
    learning_rate=1e-4 if args.tiny else 3e-5,
    multi_dataset_batch_sampler=InterleavedBatchSampler,
    eval_strategy="steps",
    eval_steps=25 if args.tiny else 125,
    save_steps=25 if args.tiny else 125,
    load_best_model_at_end=True,
    metric_for_best_model=SELECTION_METRIC,
    report_to="none",
)
trainer = NonLinguisticTrainer(
    model=model,
    args=training_args,
    train_dataset=DatasetDict({"text": sentence_pairs_dataset(sentences), "captions": captions}),
    loss={"text": simcse, "captions": grounding},
    evaluator=sts_dev_evaluator(args.sts_dir),
)
trainer.train()

# 5. Score, save (the heads stay behind: the model is the text encoder), export, publish
print(f"STS-B dev after training: {100 * trainer.evaluator(model)[trainer.evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
export = export_text_model(model, output / "export")
print(f"saved {output / 'model'} and {export}")
if args.push_to_hub:
    SentenceTransformer(str(export)).push_to_hub(args.push_to_hub)
