"""Multi-task contrastive training with sbert-nonling: contrastive pre-training, then task heads with an average loss.

Real run (GPU, Hub reachable; bert-base-uncased, the paper's hyper-parameters):
    python examples/train_multitask.py --nli-file nli_for_simcse.csv --sts-dir SentEval/data/downstream/STS
Offline smoke run on this repository's shared data (a tiny random encoder, a few steps per stage):
    python examples/train_multitask.py --tiny --max-steps 20 \
        --nli-file ../shared/data/corpus/snli_devtest_triplets.csv --sts-dir ../shared/data/sts
Compare the schemes with --scheme round_robin / proportional (default: average).
"""

from __future__ import annotations

import argparse

from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import get_recipe
from sbert_nonling.training.multitask import train_multitask

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--nli-file", required=True, help="NLI triplets CSV (sent0,sent1,hard_neg) for contrastive pre-training")
parser.add_argument("--text-file", help="optional sentences, one per line, added as unsupervised (s, s) pairs to pre-training")
parser.add_argument("--sts-dir", required=True, help="SentEval-layout STS folder: STS-B dev (model selection), SICK trial")
parser.add_argument("--task-dir", help="folder with STSBenchmark/sts-train.csv and SICK/SICK_train.txt (default: --sts-dir)")
parser.add_argument("--scheme", default="average", choices=["average", "round_robin", "proportional"])
parser.add_argument("--output", default="runs/multitask")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int, help="cap on the steps of each stage")
parser.add_argument("--train-limit", type=int, help="use at most this many (randomly drawn) examples per training file")
args = parser.parse_args()

# 1. The recipe: tau 0.05, heads hidden 768 / dropout 0.3, first layer shared by the pair tasks, average loss
overrides = {"scheme": args.scheme} if args.train_limit is None else {"scheme": args.scheme, "train_limit": args.train_limit}
settings = get_recipe("multitask", tiny=args.tiny, overrides=overrides)
print({key: settings[key] for key in ("tasks", "scheme", "contrastive_learning_rate", "multitask_learning_rate", "head_hidden_dimension")})

# 2. Contrastive pre-training on NLI triplets, then the classification / pair classification / STS heads;
#    each stage keeps its best checkpoint on STS-B dev
result = train_multitask(
    settings, args.output, text_file=args.text_file, nli_file=args.nli_file, sts_dir=args.sts_dir, task_dir=args.task_dir,
    max_steps=args.max_steps, overwrite=args.overwrite,
)

# 3. STS-B dev after each stage, then before / after; the heads were training-only, the export is a plain model
for stage in result["stages"]:
    print(f"{stage['stage']:<12} steps {stage['global_step']:>5}  STS-B dev {stage['dev']['STSBenchmark']:.2f}")
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
print(f"export (plain SentenceTransformer(path)): {result['export']}")
