"""The experiment grid of issue 9: one fixed setup, seven methods and one control, two backbones (see docs/results.md).

Every method sees the same text budget: one pass over the first ``TEXT_LINES`` lines of the wiki sample in batches
of ``BATCH_SIZE`` (100 text steps), max 32 tokens, STS-B dev evaluated every 25 text steps, the best checkpoint on
it kept. Modality steps come on top, as each method schedules them (VisualCSE / AudioCSE: one image / audio step
before every text step; MCSE: one caption per photo, as MCSE samples, i.e. 7 caption batches interleaved; MACD
trains on those captions only: 14 passes, 98 steps; the pixel route runs its own curriculum of 100 sequential steps).
The modality settings are the papers' (BERT-base rows) except what this CPU cannot afford, stated next to each.

Two controls: VisualCSE (SupCon) with the image learning rate 0, at the text rate VisualCSE (SupCon) selected (no
search of its own), and AudioCSE with the audio learning rate 0 at AudioCSE's text rate. Their modality steps draw
the same augmentations and dropout masks, so their text steps see the same random stream as the treated method's, but
nothing learns from images / audio: the treated method minus its control is the effect of modality learning, the
control minus SimCSE the effect of the modality steps' random draws alone.

Two speed variants, each at the text rate VisualCSE (SupCon) selected (no search of their own), to show whether a
cheaper image step costs STS-B dev quality: VisualCSE-keep50, patch dropout 50 % (each image view keeps [CLS] and 8
of its 16 patch tokens in training), and VisualCSE-fast, the ``visualcse-fast`` recipe scaled to this setup: half the
resolution (32 px: 4 patches; the recipe: 112 of 224 px) and patch dropout 25 %, i.e. [CLS] + 1 patch per view in
training, the same 1/16 share of the setup's patch tokens as the recipe keeps of the paper's (12 of 196).
"""

from __future__ import annotations

from typing import Any

TEXT_LINES = 6400
BATCH_SIZE = 64
MAX_SEQ_LENGTH = 32
SEEDS = (0, 1, 2)
#: The learning-rate search grid of each backbone (text learning rate; tried on seed 0, the best on STS-B dev kept).
LEARNING_RATES = {"minilm": (1e-5, 3e-5), "random": (1e-4, 3e-4)}
#: Image / audio AdamW learning rates of the alternating scheme: the paper's BERT-base values for MiniLM, the tiny
#: recipes' for the random encoder (whose text rate is ~10x higher).
MODALITY_LEARNING_RATES = {"minilm": {"image": 1e-6, "audio": 2e-7}, "random": {"image": 1e-5, "audio": 1e-5}}
#: Image side: Imagenette (10 ImageNet classes, 200 photos each) resized to 64 px, 16-px patches: 16 patch tokens
#: + [CLS] = 17 tokens (the paper: 224 px, 197 tokens), into a random patch embedding (no ViT weights offline).
IMAGE_SETTINGS = {"vit": None, "img_size": 64, "patch_size": 16, "images_per_class": None, "modality_batch_size": 48}
#: Audio side: all 3,000 spoken-digit clips, speaker = class (6 speakers), 256 fbank frames (2.56 s; the paper:
#: 1024), SpecAugment scaled to the shorter input.
AUDIO_SETTINGS = {"target_frames": 256, "clips": None, "freq_mask": 48, "time_mask": 48, "modality_batch_size": 48}
#: Grounding side: the 441 Flickr8k photos and their 2,205 captions, frozen EfficientNet-Lite0 features
#: (1280-d global, 7 x 7 regions for MACD); one caption per photo per run (seeded), 7 batches of 64.
GROUNDING_SETTINGS = {"image_encoder": "efficientnet-lite0", "image_dimension": 1280}

METHODS: dict[str, dict[str, Any]] = {
    "simcse": {"recipe": "simcse-unsup", "label": "SimCSE-unsup (baseline)", "overrides": {}},
    "visualcse-supcon": {
        "recipe": "visualcse",
        "label": "VisualCSE (SupCon)",
        "modality": "image",
        "overrides": {**IMAGE_SETTINGS, "modality_mode": "supcon"},
    },
    "visualcse-simclr": {
        "recipe": "visualcse",
        "label": "VisualCSE (SimCLR)",
        "modality": "image",
        "overrides": {**IMAGE_SETTINGS, "modality_mode": "simclr"},
    },
    "visualcse-image-lr0": {  # control: VisualCSE (SupCon) with image steps that move nothing (see module docstring)
        "recipe": "visualcse",
        "label": "VisualCSE (SupCon), image lr 0: control",
        "modality": "image",
        "control_of": "visualcse-supcon",
        "overrides": {**IMAGE_SETTINGS, "modality_mode": "supcon"},
    },
    "audiocse": {
        "recipe": "audiocse",
        "label": "AudioCSE (SupCon, speakers)",
        "modality": "audio",
        "overrides": dict(AUDIO_SETTINGS),
    },
    "visualcse-keep50": {  # speed variant: patch dropout 50 %, VisualCSE (SupCon)'s text rate
        "recipe": "visualcse",
        "label": "VisualCSE (SupCon, patch dropout 50 %)",
        "modality": "image",
        "rate_of": "visualcse-supcon",
        "overrides": {**IMAGE_SETTINGS, "modality_mode": "supcon", "token_keep_ratio": 0.5},
    },
    # speed variant: the visualcse-fast recipe (half resolution, patch dropout 25 %), same text rate
    "visualcse-fast": {
        "recipe": "visualcse-fast",
        "label": "VisualCSE-fast (SupCon, 32 px, patch dropout 25 %)",
        "modality": "image",
        "rate_of": "visualcse-supcon",
        "overrides": {**IMAGE_SETTINGS, "img_size": 32, "modality_mode": "supcon"},
    },
    "audiocse-audio-lr0": {  # control: AudioCSE with audio steps that move nothing (see module docstring)
        "recipe": "audiocse",
        "label": "AudioCSE, audio lr 0: control",
        "modality": "audio",
        "control_of": "audiocse",
        "overrides": dict(AUDIO_SETTINGS),
    },
    "mcse": {"recipe": "mcse", "label": "MCSE", "overrides": {**GROUNDING_SETTINGS, "epochs": 1}},
    "macd": {
        "recipe": "macd",
        "label": "MACD (anchored)",
        "overrides": {**GROUNDING_SETTINGS, "epochs": 14, "gradient_accumulation_steps": 1},
    },
    "pixel": {
        "recipe": "pixel-linguist",
        "label": "Pixel route (visual -> topical -> reasoning)",
        "backbones": ("random",),
        "overrides": {
            "visual.batch_size": BATCH_SIZE,
            "topical.batch_size": BATCH_SIZE,
            "reasoning.batch_size": BATCH_SIZE,
            "visual.max_steps": 25,
            "topical.max_steps": 25,
            "reasoning.max_steps": 50,
            "eval_steps": 25,
        },
    },
}


def method_overrides(method: str, backbone: str, learning_rate: float) -> dict[str, Any]:
    """The recipe overrides of one grid cell: the fixed setup, the method's settings, the learning rate."""
    spec = METHODS[method]
    if method == "pixel":  # its own curriculum; the visual stage at a tenth of the rate, as the paper's 3e-6 vs 3e-5
        rates = {
            "visual.learning_rate": learning_rate / 10,
            "topical.learning_rate": learning_rate,
            "reasoning.learning_rate": learning_rate,
        }
        return {**spec["overrides"], **rates}
    overrides = {
        **spec["overrides"],
        "learning_rate": learning_rate,
        "batch_size": BATCH_SIZE,
        "max_seq_length": MAX_SEQ_LENGTH,
        "pooling": "mean",
        "max_steps": -1,
        "eval_steps": 50 if "modality" in spec else 25,
    }
    if "modality" in spec:
        overrides["modality_learning_rate"] = (
            0.0 if "control_of" in spec else MODALITY_LEARNING_RATES[backbone][spec["modality"]]
        )
    return overrides


def rate_source(method: str) -> str | None:
    """The method whose selected text learning rate ``method`` reuses without a search of its own (a control's
    treated method, a speed variant's original), or None for a method that searches the grid."""
    spec = METHODS[method]
    return spec.get("control_of", spec.get("rate_of"))


def grid_methods(backbone: str) -> list[str]:
    """The methods run on ``backbone`` (the pixel route has its own encoder: random only)."""
    return [name for name, spec in METHODS.items() if backbone in spec.get("backbones", ("minilm", "random"))]
