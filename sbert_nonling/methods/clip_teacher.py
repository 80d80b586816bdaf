"""The methods whose caption batches carry a frozen CLIP's embeddings (KDMCSE, DALR): the teacher, its features and
the plan they share; each method gives its caption loss."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from torch import nn

from sbert_nonling.configs.clip_teacher import CLIPTeacherConfig
from sbert_nonling.data.captions import caption_clip_dataset
from sbert_nonling.data.clip_features import extract_clip_features, load_clip_features
from sbert_nonling.data.frozen_clip import FrozenCLIP
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.retrieval import SharedSpace, evaluate_retrieval
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods.grounding import (
    GroundingPlan,
    caption_training_stage,
    grounding_pairs,
    heldout_retrieval_set,
)
from sbert_nonling.methods.sentence_encoder import (
    recipe_label,
    single_run_arguments,
    starting_sentence_model,
    text_contrastive_loss,
    text_training_data,
)
from sbert_nonling.models.tiny_encoder import resolve_model
from sbert_nonling.util.unreachable import loading

#: Builds a method's caption loss from the model, its text loss and the plan's training sentences.
CaptionLoss = Callable[[SentenceTransformer, SimCSELoss, list[str]], nn.Module]

#: What to do without the network when the CLIP teacher cannot be loaded.
CLIP_OFFLINE = (
    "pass precomputed CLIP features (image_features=F, --image-features F; made by `sbert-nonling features --encoder "
    "clip-vit-large-patch14 --captions FILE`), or train the recipe's tiny form (--tiny: a small random CLIP)."
)


def load_teacher_clip(config: CLIPTeacherConfig, captions: list[str]) -> FrozenCLIP:
    """The frozen CLIP teacher of ``config`` (``clip_encoder`` as :func:`resolve_model` resolves it: a Hub name or
    folder, or ``tiny:clip``, a tiny random CLIP of ``config.clip_dimension`` whose vocabulary comes from
    ``captions``), on the GPU when there is one; one ValueError line when it cannot be loaded.

    Args:
        config: the method's config (``clip_encoder``, ``clip_dimension``, ``seed``).
        captions: the training captions.
    """
    named_by = f"{recipe_label(config)}, setting 'clip_encoder'"
    with resolve_model(config.clip_encoder, captions, seed=config.seed, projection_dim=config.clip_dimension) as name:
        with loading("CLIP", config.clip_encoder, named_by, CLIP_OFFLINE):
            clip = FrozenCLIP.from_pretrained(name)
    return clip.to("cuda" if torch.cuda.is_available() else "cpu")  # features once, on the GPU where there is one


def clip_features(
    config: CLIPTeacherConfig, pairs: list[tuple[str, str]], images: dict[str, Any], features_file: str | Path | None
) -> tuple[list[str], list[str], dict[str, torch.Tensor], bool]:
    """Image names, captions, CLIP's image (``"global"``) and caption (``"captions"``) embeddings, and whether they
    were extracted now (with :func:`load_teacher_clip`) rather than read from ``features_file``; a ValueError when
    their width is not ``config.clip_dimension``.

    Args:
        config: the method's config.
        pairs: every ``(image name, caption)`` pair the run reads, held-out ones included.
        images: each image name's file or undecoded Hub value.
        features_file: CLIP features written by ``sbert-nonling features --encoder clip-... --captions``, or None.
    """
    if features_file is not None:
        names, captions, features = load_clip_features(features_file)
        extracted = False
    else:
        names = sorted({image for image, _ in pairs})
        captions = list(dict.fromkeys(caption for _, caption in pairs))
        clip = load_teacher_clip(config, captions)
        features = extract_clip_features([images[name] for name in names], captions, clip)
        extracted = True
    if features["global"].shape[-1] != config.clip_dimension:
        raise ValueError(
            f"CLIP features have dimension {features['global'].shape[-1]}, {recipe_label(config).lower()} expects "
            f"clip_dimension={config.clip_dimension}."
        )
    return names, captions, features, extracted


def build_clip_grounding(
    config: CLIPTeacherConfig, data: DataSources, caption_loss: CaptionLoss, drop_last_batch: bool = False
) -> GroundingPlan:
    """The plan KDMCSE and DALR share: caption batches (the caption twice + the (2, d) CLIP embeddings of its image
    and of itself, every caption an example) with the method's ``caption_loss`` beside text batches with
    :class:`SimCSELoss` (``config.text_loss``) unless ``config.data == "captions"``; one run of
    :class:`NonLinguisticTrainer` that interleaves them.

    The CLIP embeddings are read from ``data.image_features`` or computed now (:func:`clip_features`; the plan's
    ``extracted_features`` and ``extracted_captions``). A caption loss with a shared caption-image space (a
    :class:`SharedSpace`: KDMCSE's :class:`TeacherGuidedAlignLoss`) gives the plan a ``"retrieval"`` evaluation:
    caption <-> image Recall@1/5 on the held-out images (``{}`` without them); held-out images are refused for
    another loss.

    Args:
        config: the method's config.
        data: ``captions_file`` (+ ``image_dir`` for a local file) or a Hub image-caption dataset; optional
            ``image_features`` (CLIP's) and ``heldout_images_file``; ``text_file`` / ``nli_file`` and ``sts_dir`` as
            for :func:`~sbert_nonling.methods.simcse.build_simcse`.
        caption_loss: builds the caption loss from the model, the text loss and the training sentences.
        drop_last_batch: leave out each dataset's last, shorter batch of an epoch (a caption loss that needs
            several captions in a batch: DALR's BatchNorm aligners); a compiled run leaves it out either way.
    """
    text_dataset, sentences = text_training_data(config, data.text_file, data.nli_file, captions_only=True)
    pairs, heldout_pairs, images = grounding_pairs(config, data)
    sentences = sentences + [caption for _, caption in pairs]
    sentence_model = starting_sentence_model(config, sentences)
    evaluator = sts_dev_evaluator(data.sts_dir, config.eval_tasks) if data.sts_dir is not None else None
    args = single_run_arguments(config, evaluator is not None, interleaved=text_dataset is not None)
    args.dataloader_drop_last = drop_last_batch or args.dataloader_drop_last  # a compiled run drops it already
    text_loss = text_contrastive_loss(sentence_model, config.text_loss, args.world_size > 1)
    grounding = caption_loss(
        sentence_model, text_loss, sentences
    )  # its teachers load, or are refused, before CLIP runs
    if heldout_pairs and not isinstance(grounding, SharedSpace):
        raise ValueError(
            f"{recipe_label(config)} has no shared caption-image space to score held-out images in: leave out "
            "heldout_images_file (--heldout-images)."
        )
    names, captions, features, extracted = clip_features(config, pairs + heldout_pairs, images, data.image_features)
    heldout = heldout_retrieval_set(heldout_pairs, names, features["global"]) if heldout_pairs else None
    caption_dataset = caption_clip_dataset(pairs, names, captions, features)
    plan = GroundingPlan(
        sentence_model,
        [caption_training_stage(args, caption_dataset, grounding, text_dataset, text_loss)],
        evaluator,
        extracted_features=(names, features) if extracted else None,
        extracted_captions=captions if extracted else None,
    )
    if isinstance(grounding, SharedSpace):  # a shared caption-image space to score retrieval in

        def retrieval(trained) -> dict[str, float]:
            return evaluate_retrieval(trained, grounding, **heldout) if heldout is not None else {}

        plan.evaluations["retrieval"] = retrieval
    return plan
