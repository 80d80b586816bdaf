"""The value sets (``Literal`` aliases) that the typed configs share with the modules, losses and trainers they
configure, in a module that imports no torch: validating a recipe (:mod:`sbert_nonling.configs`) loads no heavy
library. Where code checks a value at run time, it reads the valid values with ``typing.get_args`` of the alias."""

from __future__ import annotations

from typing import Literal

#: Kind of a training-only head owned by a loss (:func:`sbert_nonling.util.heads.make_training_head`).
TrainingHead = Literal["mlp", "linear", "linear_gelu_layernorm", "none"]
#: Pooling of :func:`sbert_nonling.models.build_sentence_model` (``cls_mlp``: sup SimCSE's Dense kept at inference).
PoolingChoice = Literal["cls", "cls_mlp", "mean", "lasttoken"]
#: Where a front-end's tokens enter the shared encoder: its embedding layer or straight into its layers.
EncoderEntry = Literal["embeddings", "bypass"]
#: Patch layout of :class:`sbert_nonling.modules.AudioPatchEmbed`: the released VisualCSE code's or SSAST's.
AudioLayout = Literal["released", "ssast"]
#: Mode of :class:`sbert_nonling.losses.UnpairedModalityContrastiveLoss`.
ContrastiveMode = Literal["simclr", "supcon", "released_label_rank"]
#: Grounding direction of :class:`sbert_nonling.losses.MultimodalAlignLoss`: captions to images (MCSE) or both (MACD).
Direction = Literal["text_to_image", "symmetric"]
#: The score of :class:`sbert_nonling.losses.TeacherGuidedAlignLoss`'s negative filter: the cosine of the two CLIP
#: embeddings (KDMCSE's paper) or their raw dot product (its released code).
FilterScores = Literal["cosine", "released_dot_product"]
#: The listwise loss of :class:`sbert_nonling.losses.ListwiseDistillationLoss`: ListMLE (DALR's scripts) or ListNet.
ListwiseKind = Literal["listmle", "listnet"]
#: How :class:`sbert_nonling.losses.DALRLoss` pairs each caption with another caption's image for its consistency term:
#: a random derangement (the paper's shuffle) or the released roll by 5.
ConsistencyMismatch = Literal["shuffle", "released_roll"]
#: The axis :class:`sbert_nonling.losses.DALRLoss` normalises the teachers' token states over in its token term:
#: the feature axis, or the token axis (DALR's released code).
TokenNormalization = Literal["feature", "released_token"]
#: Pair classifier of :class:`sbert_nonling.losses.PairClassificationLoss`.
PairHead = Literal["bilinear", "concat"]
#: How :class:`sbert_nonling.training.UnpairedModalityTrainer` shares training between the modality and text steps:
#: alternating (each with its own optimizer) or joint (one weighted sum).
Scheme = Literal["alternating", "joint"]
#: How a multi-task stage mixes tasks: ``average`` (one batch of every task per optimizer step, losses averaged), or
#: ``round_robin`` / ``proportional`` (sentence-transformers' samplers, one task's batch per optimizer step).
MultiTaskScheme = Literal["average", "round_robin", "proportional"]
#: What the STS dev evaluation during training scores: STS-B dev alone (``selection``) or every dev task (``all``).
EvalTasks = Literal["selection", "all"]
#: The STS split a table reads: ``dev`` (for selection) or ``test`` (only for reporting).
Split = Literal["dev", "test"]
#: Numeric precision of training (:attr:`sbert_nonling.configs.MethodConfig.precision`).
Precision = Literal["auto", "fp32", "fp16", "bf16"]
#: The model names that stand for a tiny random model built offline (``models.resolve_model``), and what each builds;
#: here, torch-free, so that the command line checks a ``--model`` before any heavy import.
TINY_MODELS: dict[str, str] = {
    "tiny:bert": "a tiny BERT with a WordPiece vocabulary from the training text (build_tiny_encoder)",
    "tiny:clip": "a tiny CLIP with a WordPiece vocabulary from the training captions (build_tiny_clip)",
    "tiny:pixel": "a tiny PIXEL-architecture encoder over rendered text (build_tiny_pixel)",
}
