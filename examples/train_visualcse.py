"""VisualCSE (Jian et al., 2022): SimCSE on sentences plus supervised contrastive steps on unpaired images, through one
shared encoder, as a plain sentence-transformers script.

Images enter the text encoder's layers through a ViT patch embedding (ImagePatchEmbed, "bypass" entry); every image
step (SupCon on two augmented views, its own AdamW at lr 1e-6) is followed by a SimCSE text step (lr 3e-5).

Usage:
    python examples/train_visualcse.py                                  # bert-base-uncased + ViT-B/16 patches (GPU)
    python examples/train_visualcse.py --model sentence-transformers/all-mpnet-base-v2 --images my_class_folders/
    python examples/train_visualcse.py --tiny --text ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --images ../shared/data/images/cifar10/train --sts-dir ../shared/data/sts --max-steps 20   # offline
"""

from __future__ import annotations

import argparse
from pathlib import Path

from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling import ImagePatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss, export_text_model
from sbert_nonling.data import image_folder_dataset, read_sentences, sentence_pairs_dataset
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_sentence_model, build_tiny_encoder
from sbert_nonling.training import UnpairedModalityTrainer
from sbert_nonling.training.arguments import SELECTION_METRIC

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="bert-base-uncased", help="encoder or sentence-transformers model to train")
parser.add_argument(
    "--vit", default="google/vit-base-patch16-224-in21k", help="ViT whose patch embedding reads the images"
)
parser.add_argument(
    "--text", default="princeton-nlp/datasets-for-simcse?data_files=wiki1m_for_simcse.txt", help="sentences"
)
parser.add_argument(
    "--images", default="uoft-cs/cifar10?image=img", help="labelled images: class folders or a Hub dataset"
)
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/visualcse")
parser.add_argument(
    "--tiny", action="store_true", help="offline: small random encoder and patch embedding, 32-px images"
)
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model")
args = parser.parse_args()
output = Path(args.output)

# 1. Data: sentence pairs for SimCSE, and two augmented views + class label per image for SupCon
sentences = read_sentences(args.text)
images, classes = image_folder_dataset(
    args.images, image_size=32 if args.tiny else 224, limit_per_class=30 if args.tiny else None
)
train_dataset = DatasetDict({"image": images, "text": sentence_pairs_dataset(sentences)})

# 2. The model: the text encoder (a sentence-transformers model keeps its own pooling and normalisation), plus an image
#    route whose patch tokens go straight into the same encoder's layers
model = build_sentence_model(str(build_tiny_encoder(output / "tiny-encoder", sentences)) if args.tiny else args.model)
hidden_size = model[0].encoder.get_embedding_dimension()
if args.tiny:
    front_end = ImagePatchEmbed(image_size=32, patch_size=8, embedding_dimension=hidden_size, encoder_entry="bypass")
else:
    front_end = ImagePatchEmbed.from_vit(args.vit, encoder_entry="bypass")
model[0].add_route("image", front_end)

# 3. One loss per dataset: SimCSE on text, SupCon (tau 0.07) on the images' two views
losses = {"image": UnpairedModalityContrastiveLoss(model, mode="supcon", temperature=0.07), "text": SimCSELoss(model)}
evaluator = sts_dev_evaluator(args.sts_dir)

# 4. Arguments of the text optimizer; the image batches (48) and their AdamW rate (1e-6) go to the trainer below
steps = 25 if args.tiny else 125
training_args = SentenceTransformerTrainingArguments(
    output_dir=str(output / "checkpoints"),
    num_train_epochs=1,
    max_steps=args.max_steps,
    per_device_train_batch_size=64,
    learning_rate=1e-4 if args.tiny else 3e-5,
    eval_strategy="steps",
    eval_steps=steps,
    save_steps=steps,
    save_total_limit=2,
    load_best_model_at_end=True,
    metric_for_best_model=SELECTION_METRIC,
    report_to="none",
)

# 5. The trainer alternates an image step (own AdamW) and a text step, VisualCSE's Algorithm 1
trainer = UnpairedModalityTrainer(
    model=model,
    args=training_args,
    train_dataset=train_dataset,
    loss=losses,
    evaluator=evaluator,
    scheme="alternating",
    batch_sizes={"image": 16 if args.tiny else 48},
    learning_rates={"image": 1e-5 if args.tiny else 1e-6},
)
trainer.train()

# 6. Score; save the full model (encodes text and images; trust_remote_code=True to load) and the plain text export
print(f"STS-B dev after training: {100 * evaluator(model)[evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
export = export_text_model(model, output / "export")
print(f"saved {output / 'model'} and {export}; {len(classes)} image classes")
if args.push_to_hub:
    SentenceTransformer(str(export)).push_to_hub(args.push_to_hub)
