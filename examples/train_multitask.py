"""Multi-task contrastive training ("Contrastive Learning for Generalizable Sentence Embeddings", Stanford CS224N) as
a plain sentence-transformers script.

Stage 1 trains SimCSE on NLI triplets (entailment as the positive, contradiction as a hard negative, tau 0.05). Stage 2
trains training-only task heads on the same encoder: STS-B train sentence -> genre (classification), SICK entailment
(bilinear pair classification) and STS-B scores (cosine regression), the pair tasks sharing their first head layer,
one batch of every task per optimizer step (the average loss). The heads stay in the losses: the saved model is the
encoder, and its text export a plain sentence-transformers model.

Usage:
    # bert-base-uncased, NLI from the Hub (GPU)
    python examples/train_multitask.py --task-dir SentEval/data/downstream/STS
    python examples/train_multitask.py --nli my_triplets.csv --task-dir STS --scheme round_robin
    python examples/train_multitask.py --tiny --nli ../shared/data/corpus/snli_devtest_triplets.csv \
        --task-dir ../shared/data/sts --sts-dir ../shared/data/sts --train-limit 200 --max-steps 20   # offline
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers

from sbert_nonling import SimCSELoss, export_text_model
from sbert_nonling.data import nli_triplets_dataset, read_nli_triplets
from sbert_nonling.data.tasks import (
    pair_classification_dataset,
    read_sick_entailment,
    read_stsb_genres,
    sentence_classification_dataset,
    sts_regression_dataset,
)
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.evaluation.sts_data import read_stsb_csv
from sbert_nonling.losses import HeadLayer, PairClassificationLoss, SentenceClassificationLoss, STSRegressionLoss
from sbert_nonling.models import build_sentence_model, build_tiny_encoder
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.arguments import SELECTION_METRIC
from sbert_nonling.training.multitask_sampler import multitask_sampler_arguments

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="bert-base-uncased", help="Hub name or folder of the encoder to train")
parser.add_argument(
    "--nli",
    default="princeton-nlp/datasets-for-simcse?data_files=nli_for_simcse.csv",
    help="NLI triplets (sent0,sent1,hard_neg): a Hub dataset (owner/name?...) or a local CSV",
)
parser.add_argument(
    "--task-dir", required=True, help="SentEval layout: STSBenchmark/sts-train.csv and SICK/SICK_train.txt"
)
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument(
    "--scheme", default="average", choices=["average", "round_robin", "proportional"], help="stage 2 task mixing"
)
parser.add_argument(
    "--train-limit", type=int, help="use at most this many (randomly drawn) examples per training file"
)
parser.add_argument("--output", default="runs/multitask")
parser.add_argument("--tiny", action="store_true", help="offline: a small random encoder built from the training text")
parser.add_argument("--max-steps", type=int, default=-1, help="cap on the steps of each stage")
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model")
args = parser.parse_args()
output, task_dir = Path(args.output), Path(args.task_dir)


def sample(rows: list) -> list:
    """At most --train-limit rows, drawn at random (release files are sorted, e.g. STS-B by genre)."""
    if args.train_limit is None or args.train_limit >= len(rows):
        return rows
    return random.Random(42).sample(rows, args.train_limit)


# 1. Data: NLI triplets for stage 1; for stage 2 one dataset per task (columns: texts, then the label / score)
triplets = sample(read_nli_triplets(args.nli))
genres = sample(read_stsb_genres(task_dir / "STSBenchmark" / "sts-train.csv"))
entailment = sample(read_sick_entailment(task_dir / "SICK" / "SICK_train.txt"))
stsb = read_stsb_csv(task_dir / "STSBenchmark" / "sts-train.csv")
scored = sample(list(zip(stsb.sentences1, stsb.sentences2, stsb.scores)))
classification, genre_names = sentence_classification_dataset(genres)
pair_classification, entailment_labels = pair_classification_dataset(entailment)
tasks = {
    "classification": classification,
    "pair_classification": pair_classification,
    "sts": sts_regression_dataset(*(list(column) for column in zip(*scored)), score_range=(0.0, 5.0)),
}

# 2. The model: the encoder behind the text route, [CLS] pooling, 128 tokens
texts = [sentence for triplet in triplets for sentence in triplet] + [sentence for sentence, _ in genres]
encoder = (
    str(build_tiny_encoder(output / "tiny-encoder", texts, vocab_size=2000, hidden_size=64))
    if args.tiny
    else args.model
)
model = build_sentence_model(encoder, pooling="cls", max_seq_length=128)

# 3. The losses: SimCSE for stage 1; a training-only head per task for stage 2, the first layer shared by the pair
# tasks
hidden, dropout = (32, 0.3) if args.tiny else (768, 0.3)
shared_layer = HeadLayer(model.get_embedding_dimension(), hidden, dropout)
contrastive_loss = SimCSELoss(model, temperature=0.05, training_head="none")
task_losses = {
    "classification": SentenceClassificationLoss(model, len(genre_names), hidden, dropout),
    "pair_classification": PairClassificationLoss(
        model, len(entailment_labels), "bilinear", hidden, dropout, head_layer=shared_layer
    ),
    "sts": STSRegressionLoss(model, hidden, dropout, head_layer=shared_layer),
}

# 4. The dev evaluator (STS-B dev cosine Spearman, the only selection signal)
evaluator = sts_dev_evaluator(args.sts_dir)


# 5. Training arguments per stage: evaluate, keep the best checkpoint; stage 2 adds the scheme's task sampler
def stage_arguments(
    stage: str, learning_rate: float, batch_size: int, epochs: int, **extra
) -> SentenceTransformerTrainingArguments:
    steps = 10 if args.tiny else 125
    return SentenceTransformerTrainingArguments(
        output_dir=str(output / "stages" / stage / "checkpoints"),
        num_train_epochs=epochs,
        max_steps=args.max_steps,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        eval_strategy="steps",
        eval_steps=steps,
        save_steps=steps,
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model=SELECTION_METRIC,
        report_to="none",
        **extra,
    )


contrastive_args = stage_arguments(
    "contrastive",
    1e-4 if args.tiny else 3e-5,
    16 if args.tiny else 64,
    epochs=1,
    batch_sampler=BatchSamplers.NO_DUPLICATES,
)
multitask_args = stage_arguments(
    "multitask",
    1e-4 if args.tiny else 1e-5,
    8 if args.tiny else 32,
    epochs=1 if args.tiny else 10,
    batch_sampler=BatchSamplers.BATCH_SAMPLER,
    **multitask_sampler_arguments(args.scheme, len(tasks)),
)

# 6. Train the stages in turn; the trainer checkpoints the loss-owned heads with the model
for stage, train_dataset, loss, training_args in (
    ("contrastive", nli_triplets_dataset(triplets), contrastive_loss, contrastive_args),
    ("multitask", tasks, task_losses, multitask_args),
):
    trainer = NonLinguisticTrainer(
        model=model, args=training_args, train_dataset=train_dataset, loss=loss, evaluator=evaluator
    )
    trainer.train()
    print(
        f"{stage}: {trainer.state.global_step} steps, STS-B dev {100 * evaluator(model)[evaluator.primary_metric]:.2f}"
    )

# 7. Score; save the full model and the plain text export (the heads were training-only)
print(f"STS-B dev after training: {100 * evaluator(model)[evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
export = export_text_model(model, output / "export")
print(f"saved {output / 'model'} and {export}")
if args.push_to_hub:
    SentenceTransformer(str(export)).push_to_hub(args.push_to_hub)
