"""AudioCSE (Jian et al., 2022): SimCSE on sentences plus supervised contrastive steps on unpaired speech (class =
speaker), through one shared encoder, as a plain sentence-transformers script.

Clips become kaldi fbank patches (AudioPatchEmbed: 128 mel bins x 1024 frames, SpecAugment) that enter the text
encoder's layers directly; each audio step has its own AdamW (lr 2e-7), each text step is SimCSE (lr 3e-5).

Usage:
    python examples/train_audiocse.py                                   # bert-base-uncased, LibriSpeech speakers (GPU)
    python examples/train_audiocse.py --audio my_clips/ --speaker-regex '^(\\d+)-'    # a folder, class from file names
    python examples/train_audiocse.py --tiny --text ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --audio ../shared/data/audio/fsdd --speaker-regex '^\\d+_([a-z]+)_' --sts-dir ../shared/data/sts --max-steps 20
"""

from __future__ import annotations

import argparse
from pathlib import Path

from datasets import DatasetDict
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

from sbert_nonling import AudioPatchEmbed, SimCSELoss, UnpairedModalityContrastiveLoss, export_text_model
from sbert_nonling.data import audio_folder_dataset, label_from_regex, read_sentences, sentence_pairs_dataset
from sbert_nonling.evaluation import sts_dev_evaluator
from sbert_nonling.models import build_sentence_model, build_tiny_encoder
from sbert_nonling.training import UnpairedModalityTrainer
from sbert_nonling.training.arguments import SELECTION_METRIC

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default="bert-base-uncased", help="encoder or sentence-transformers model to train")
parser.add_argument(
    "--text", default="princeton-nlp/datasets-for-simcse?data_files=wiki1m_for_simcse.txt", help="sentences"
)
parser.add_argument(
    "--audio",
    default="openslr/librispeech_asr?config=clean&split=train.100&label=speaker_id",
    help="speech: a Hub dataset with a label column, or a folder of audio files (with --speaker-regex)",
)
parser.add_argument("--speaker-regex", help="for a folder: pattern whose first group of the file name is the speaker")
parser.add_argument("--sts-dir", help="SentEval-layout STS folder for dev scores; default: STS-B dev from the Hub")
parser.add_argument("--output", default="runs/audiocse")
parser.add_argument("--tiny", action="store_true", help="offline: small random encoder, 256 fbank frames, 300 clips")
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the exported text model")
args = parser.parse_args()
output = Path(args.output)

# 1. Data: sentence pairs for SimCSE; each clip twice (dropout and SpecAugment make the views) with its speaker label
sentences = read_sentences(args.text)
speaker_of = label_from_regex(args.speaker_regex) if args.speaker_regex else None
clips, speakers = audio_folder_dataset(args.audio, speaker_of, limit=300 if args.tiny else None)
print(f"{len(clips)} clips of {len(speakers)} speakers")

# 2. The model, and an audio route: fbank patches into the same encoder's layers
model = build_sentence_model(str(build_tiny_encoder(output / "tiny-encoder", sentences)) if args.tiny else args.model)
frames = 256 if args.tiny else 1024
audio_route = AudioPatchEmbed(
    target_frames=frames,
    embedding_dimension=model[0].encoder.get_embedding_dimension(),
    encoder_entry="bypass",
    freq_mask=48,
    time_mask=frames * 3 // 16,
)
model[0].add_route("audio", audio_route)

# 3. SimCSE on text and SupCon over speakers, each trained by its own optimizer (below)
trainer = UnpairedModalityTrainer(
    model=model,
    args=SentenceTransformerTrainingArguments(
        output_dir=str(output / "checkpoints"),
        max_steps=args.max_steps,
        per_device_train_batch_size=64,
        learning_rate=1e-4 if args.tiny else 3e-5,
        eval_strategy="steps",
        eval_steps=25 if args.tiny else 125,
        save_steps=25 if args.tiny else 125,
        load_best_model_at_end=True,
        metric_for_best_model=SELECTION_METRIC,
        report_to="none",
    ),
    train_dataset=DatasetDict({"audio": clips, "text": sentence_pairs_dataset(sentences)}),
    loss={"audio": UnpairedModalityContrastiveLoss(model, mode="supcon", temperature=0.07), "text": SimCSELoss(model)},
    evaluator=sts_dev_evaluator(args.sts_dir),
    batch_sizes={"audio": 16 if args.tiny else 48},
    learning_rates={"audio": 1e-5 if args.tiny else 2e-7},
)

# 4. Train: audio step, text step, audio step, ...; the best STS-B dev checkpoint is loaded at the end
trainer.train()

# 5. Score, save (the full model also encodes {"array", "sampling_rate"} audio), export the text model, publish
dev = trainer.evaluator(model)
print(f"STS-B dev after training: {100 * dev[trainer.evaluator.primary_metric]:.2f}")
model.save(str(output / "model"))
export = export_text_model(model, output / "export")
print(f"saved {output / 'model'} and {export}")
if args.push_to_hub:
    SentenceTransformer(str(export)).push_to_hub(args.push_to_hub)
