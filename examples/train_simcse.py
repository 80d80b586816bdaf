"""Unsupervised SimCSE (Gao et al., 2021) as a plain sentence-transformers training script.

Each sentence is encoded twice with different dropout masks; the two embeddings are a positive pair, the other
sentences of the batch the negatives (SimCSELoss: InfoNCE at temperature 0.05, an MLP head used in training only).

Usage:
    python examples/train_simcse.py                                    # bert-base-uncased on wiki1m from the Hub (GPU)
    python examples/train_simcse.py --model sentence-transformers/all-MiniLM-L6-v2 --text my_sentences.txt
    python examples/train_simcse.py --tiny --text ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --sts-dir ../shared/data/sts --max-steps 20                    # offline: a small random encoder
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.modules import Pooling

from sbert_nonling import ModalityRouter, SharedEncoder, SimCSELoss, export_text_model
from sbert_nonling.data import read_sentences, sentence_pairs_dataset
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_tiny_encoder
from sbert_nonling.training.arguments import SELECTION_METRIC

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="bert-base-uncased", help="Hub name or folder of the encoder to train")
parser.add_argument(
    "--text",
    default="princeton-nlp/datasets-for-simcse?data_files=wiki1m_for_simcse.txt",
    help="sentences: a Hub dataset (owner/name?...) or a file with one sentence per line",
)
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/simcse")
parser.add_argument("--tiny", action="store_true", help="offline: a small random encoder built from the sentences")
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model, e.g. me/simcse-bert")
args = parser.parse_args()
output = Path(args.output)

# 1. Data: (sentence, sentence) pairs; dropout makes the two views differ
sentences = read_sentences(args.text)
train_dataset = sentence_pairs_dataset(sentences)

# 2. The model: the encoder behind a ModalityRouter (text route only here), then [CLS] pooling, as SimCSE
encoder_name = str(build_tiny_encoder(output / "tiny-encoder", sentences)) if args.tiny else args.model
encoder = SharedEncoder(encoder_name, max_seq_length=32)
model = SentenceTransformer(
    modules=[ModalityRouter.from_encoder(encoder), Pooling(encoder.get_embedding_dimension(), "cls")]
)

# 3. The loss and the dev evaluator (STS-B dev cosine Spearman, the only selection signal)
loss = SimCSELoss(model, temperature=0.05, training_head="mlp")
evaluator = sts_dev_evaluator(args.sts_dir)

# 4. Training arguments: the paper's batch 64, lr 3e-5, one epoch; evaluate and keep the best checkpoint
training_args = SentenceTransformerTrainingArguments(
    output_dir=str(output / "checkpoints"),
    num_train_epochs=1,
    max_steps=args.max_steps,
    per_device_train_batch_size=64,
    learning_rate=1e-4 if args.tiny else 3e-5,
    eval_strategy="steps",
    eval_steps=10 if args.tiny else 125,
    save_strategy="steps",
    save_steps=10 if args.tiny else 125,
    save_total_limit=2,
    load_best_model_at_end=True,
    metric_for_best_model=SELECTION_METRIC,
    report_to="none",
)

# 5. Train with the stock sentence-transformers trainer
trainer = SentenceTransformerTrainer(
    model=model, args=training_args, train_dataset=train_dataset, loss=loss, evaluator=evaluator
)
trainer.train()

# 6. Score, save the full model and the plain text export (loads with SentenceTransformer(path) anywhere)
print(f"STS-B dev after training: {100 * evaluator(model)[evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
export = export_text_model(model, output / "export")
print(f"saved {output / 'model'} and {export}")
if args.push_to_hub:
    SentenceTransformer(str(export)).push_to_hub(args.push_to_hub)
