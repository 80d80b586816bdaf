"""KDMCSE (Nguyen et al., 2024): SimCSE with an angular margin on sentences plus, on interleaved caption batches, a
caption <-> CLIP grounding whose margins a frozen CLIP teacher sets, as a plain sentence-transformers script.

The teacher is CLIP ViT-L/14: its image and caption embeddings are computed once, before training, and ride along as
each caption's label (2, 768). TeacherGuidedAlignLoss (weight 0.01) projects sentence embeddings and both CLIP
embeddings into a shared 256-d space with training-only Linear + Tanh heads and moves each negative 0.15 rad x
(1 - CLIP's similarity of the two targets) closer; the heads live in the loss, never in the saved model.

Usage:
    python examples/train_kdmcse.py                                     # bert-base-uncased, wiki1m + Flickr30k (GPU)
    python examples/train_kdmcse.py --captions my_captions.csv --image-dir my_images/     # local image,caption pairs
    python examples/train_kdmcse.py --tiny --text ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --captions ../shared/data/corpus/flickr8k/Flickr8k.token.txt --image-dir ../shared/data/images/flickr8k \
        --sts-dir ../shared/data/sts --max-steps 20                     # offline: a tiny random CLIP
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling import SimCSELoss, TeacherGuidedAlignLoss, export_text_model
from sbert_nonling.data import (
    FrozenCLIP,
    caption_clip_dataset,
    extract_clip_features,
    load_caption_pairs,
    read_sentences,
    sentence_pairs_dataset,
)
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_sentence_model, build_tiny_clip, build_tiny_encoder
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
parser.add_argument("--clip", default="openai/clip-vit-large-patch14", help="the frozen CLIP teacher")
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/kdmcse")
parser.add_argument("--tiny", action="store_true", help="offline: small random encoder and CLIP, 40 photos")
parser.add_argument("--bf16", action="store_true", help="bf16 autocast (the losses compute in float32)")
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model")
args = parser.parse_args()
output = Path(args.output)

# 1. Captions, and the teacher's CLIP embeddings of their images and of themselves (every caption is an example)
pairs, images = load_caption_pairs(args.captions, args.image_dir)
names = sorted(images)[: 40 if args.tiny else None]
kept = set(names)
pairs = [pair for pair in pairs if pair[0] in kept]
captions = list(dict.fromkeys(caption for _, caption in pairs))
clip_path = build_tiny_clip(output / "tiny-clip", captions, projection_dim=32) if args.tiny else args.clip
clip = FrozenCLIP.from_pretrained(str(clip_path)).to("cuda" if torch.cuda.is_available() else "cpu")
features = extract_clip_features([images[name] for name in names], captions, clip)
caption_dataset = caption_clip_dataset(pairs, names, captions, features)  # caption twice + (2, d) CLIP embeddings

# 2. Sentences for SimCSE, and the model (text route only: images never enter the encoder in KDMCSE)
sentences = read_sentences(args.text)
model = build_sentence_model(str(build_tiny_encoder(output / "tiny-encoder", sentences)) if args.tiny else args.model)

# 3. Losses: SimCSE with a 0.15 rad margin on wiki batches; plus 0.01 x the CLIP grounding on caption batches
simcse = SimCSELoss(model, temperature=0.05, margin=0.15)
grounding = TeacherGuidedAlignLoss(
    model, clip_dimension=clip.dimension, text_loss=simcse, weight=0.01, temperature=0.05, margin=0.15
)

# 4. A caption batch after every len(text) // len(captions) text batches, as KDMCSE mixes them
training_args = SentenceTransformerTrainingArguments(
    output_dir=str(output / "checkpoints"),
    num_train_epochs=3,
    max_steps=args.max_steps,
    per_device_train_batch_size=64,
    learning_rate=1e-4 if args.tiny else 3e-5,
    bf16=args.bf16,
    use_cpu=args.bf16 and not torch.cuda.is_available(),  # transformers' condition for bf16 autocast on a CPU
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
    train_dataset=DatasetDict({"text": sentence_pairs_dataset(sentences), "captions": caption_dataset}),
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
