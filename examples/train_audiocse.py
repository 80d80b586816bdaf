"""AudioCSE with sbert-nonling: SimCSE on text + SupCon on unpaired speech (class = speaker), one shared encoder.

Real run (GPU, Hub reachable; LibriSpeech train-clean-100, top-50 speakers, file names '<speaker>-<chapter>-<utt>.flac'):
    python examples/train_audiocse.py --text-file wiki1m_for_simcse.txt --audio-dir librispeech-top50 \
        --speaker-regex '^(\\d+)-' --sts-dir STS
Offline smoke run here (Free Spoken Digit Dataset, names '<digit>_<speaker>_<take>.wav'):
    python examples/train_audiocse.py --tiny --max-steps 20 --text-file ../shared/data/corpus/wiki1m_for_simcse.first11913.txt \
        --audio-dir ../shared/data/audio/fsdd --speaker-regex '^\\d+_([a-z]+)_' --sts-dir ../shared/data/sts
"""

from __future__ import annotations

import argparse

from sbert_nonling.data import audio_folder_dataset, label_from_regex
from sbert_nonling.evaluation import format_sts_table
from sbert_nonling.training import train_recipe

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--text-file", required=True)
parser.add_argument("--audio-dir", required=True)
parser.add_argument("--speaker-regex", required=True, help="first group of the file name = speaker")
parser.add_argument("--sts-dir", required=True)
parser.add_argument("--output", default="runs/audiocse")
parser.add_argument("--overwrite", action="store_true", help="replace the run --output already holds")
parser.add_argument("--tiny", action="store_true")
parser.add_argument("--max-steps", type=int)
args = parser.parse_args()

# 1. Check the speaker labels before training: every file name must match the pattern
_, speakers = audio_folder_dataset(args.audio_dir, label_from_regex(args.speaker_regex))
print(f"{len(speakers)} speakers: {speakers[:10]}")

# 2. Train the audiocse recipe (fbank 128 x 1024, 24 x 24 patches, audio AdamW lr 2e-7 next to the text AdamW 3e-5)
result = train_recipe(
    "audiocse", args.output, text_file=args.text_file, audio_dir=args.audio_dir, audio_label_regex=args.speaker_regex,
    sts_dir=args.sts_dir, tiny=args.tiny, max_steps=args.max_steps, overwrite=args.overwrite,
)

# 3. Before / after on the dev tasks; result["model"] also encodes audio (trust_remote_code=True)
print(format_sts_table({"before": result["dev_before"], "after": result["dev_after"]}))
