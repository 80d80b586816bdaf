"""Pixel Linguist (Xiao et al., 2024) as a plain sentence-transformers script: a PIXEL encoder reads text rendered as
pixels and learns sentence embeddings through a curriculum of contrastive runs.

1. Visual alignment: one run per perturbation set (typos, shuffles) on (text, perturbed text) pairs, every run from
   the same start, then the runs' weights averaged uniformly.
2. Topical alignment: two random spans of the same document as positives.
3. Reasoning alignment: NLI (premise, entailment hypothesis) pairs.
Every run trains SymmetricInfoNCE (tau 0.05) through a training-only Linear + GELU + LayerNorm token head.

Usage:
    python examples/train_pixel_linguist.py         # Team-PIXEL/pixel-base, wiki1m + NLI from the Hub (GPU)
    python examples/train_pixel_linguist.py --text my_documents.txt --nli my_triplets.csv
    python examples/train_pixel_linguist.py --tiny --text ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --nli ../shared/data/corpus/snli_devtest_triplets.csv --sts-dir ../shared/data/sts --max-steps 10   # offline
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainingArguments

from sbert_nonling import PixelEncoder, SymmetricInfoNCE
from sbert_nonling.data import read_nli_triplets, read_sentences
from sbert_nonling.data.perturbations import perturbation_pairs_dataset, span_pairs_dataset
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_pixel_model
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.arguments import SELECTION_METRIC
from sbert_nonling.training.weight_averaging import average_state_dicts

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="Team-PIXEL/pixel-base", help="PIXEL checkpoint (Hub name or folder)")
parser.add_argument(
    "--text",
    default="princeton-nlp/datasets-for-simcse?data_files=wiki1m_for_simcse.txt",
    help="documents / sentences, one per line: a Hub dataset (owner/name?...) or a local file",
)
parser.add_argument(
    "--nli",
    default="princeton-nlp/datasets-for-simcse?data_files=nli_for_simcse.csv",
    help="NLI triplets (sent0,sent1,hard_neg); the (premise, entailment) pairs are used",
)
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/pixel-linguist")
parser.add_argument(
    "--tiny", action="store_true", help="offline: a small random PIXEL-architecture encoder, 32 patches"
)
parser.add_argument("--max-steps", type=int, help="cap on the steps of every run")
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the trained model")
args = parser.parse_args()
output = Path(args.output)

# 1. Data: documents for the visual and topical stages, (premise, entailment) pairs for the reasoning stage
documents = read_sentences(args.text)
premises, entailments, _ = (list(column) for column in zip(*read_nli_triplets(args.nli)))
nli_pairs = Dataset.from_dict({"anchor": premises, "positive": entailments})
perturbation_sets = (
    [["substitute_visual", "swap"], ["conditional_shuffle"]]
    if args.tiny
    else [
        ["insert"],
        ["delete"],
        ["substitute_visual"],
        ["substitute_keyboard"],
        ["swap"],
        ["shuffle"],
        ["conditional_shuffle"],
    ]
)

# 2. The model: text rendered as 16 x 16 patches -> PIXEL encoder -> mean over unmasked patches -> L2 norm
max_patches = 32 if args.tiny else 64
if args.tiny:
    encoder = PixelEncoder.from_config(
        max_patches=max_patches, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128
    )
else:
    encoder = PixelEncoder.from_pretrained(args.model, max_patches=max_patches)
model = build_pixel_model(encoder, max_patches=max_patches)

# 3. The dev evaluator (STS-B dev cosine Spearman, the only selection signal)
evaluator = sts_dev_evaluator(args.sts_dir)


# 4. One run of the curriculum: its own arguments, a fresh SymmetricInfoNCE with its token head, best checkpoint kept
def train(name: str, pairs: Dataset, learning_rate: float, batch_size: int, steps: int) -> None:
    steps = steps if args.max_steps is None else min(steps, args.max_steps)
    training_args = SentenceTransformerTrainingArguments(
        output_dir=str(output / "stages" / name / "checkpoints"),
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        eval_strategy="steps",
        eval_steps=steps,
        save_steps=steps,
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model=SELECTION_METRIC,
        report_to="none",
    )
    loss = SymmetricInfoNCE(model, temperature=0.05, token_head="linear_gelu_layernorm")
    trainer = NonLinguisticTrainer(
        model=model, args=training_args, train_dataset=pairs, loss=loss, evaluator=evaluator
    )
    trainer.train()
    print(
        f"{name}: {trainer.state.global_step} steps, STS-B dev {100 * evaluator(model)[evaluator.primary_metric]:.2f}"
    )


rate, batch = (3e-4, 32) if args.tiny else (3e-5, 128)

# 5. Visual alignment: every run from the same start, then the runs' weights averaged
start, trained = copy.deepcopy(model.state_dict()), []
for index, perturbations in enumerate(perturbation_sets):
    model.load_state_dict(start)
    pairs = perturbation_pairs_dataset(documents, perturbations, rate=0.1, seed=42)
    train(
        f"visual-{index}-{'+'.join(perturbations)}",
        pairs,
        3e-4 if args.tiny else 3e-6,
        32 if args.tiny else 768,
        20 if args.tiny else 1300,
    )
    trained.append(copy.deepcopy(model.state_dict()))
model.load_state_dict(average_state_dicts(trained))

# 6. Topical alignment (two spans of one document), then reasoning alignment (NLI entailment pairs)
train(
    "topical",
    span_pairs_dataset(documents, 5, 24 if args.tiny else 64, seed=42),
    rate,
    batch,
    20 if args.tiny else 1300,
)
train("reasoning", nli_pairs, rate, batch, 40 if args.tiny else 2600)

# 7. Score and save: the model reads text as pixels (load it with trust_remote_code=True); it has no token route, so
#    there is no plain text export
print(f"STS-B dev after training: {100 * evaluator(model)[evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
print(f"saved {output / 'model'}")
if args.push_to_hub:
    model.push_to_hub(args.push_to_hub)
