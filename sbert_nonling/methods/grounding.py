"""MCSE / MACD as a plan: captions grounded in frozen features of their images, beside (MCSE) or instead of (MACD)
sentence batches, optionally anchored to a frozen copy of the starting model (MACD)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformerTrainingArguments

from sbert_nonling.configs.grounding import GroundingConfig
from sbert_nonling.configs.sentence_encoder import SentenceEncoderConfig
from sbert_nonling.data.captions import caption_feature_dataset, load_caption_pairs
from sbert_nonling.data.frozen_image_encoder import FrozenImageEncoder
from sbert_nonling.data.image_features import extract_image_features, load_image_features
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.retrieval import evaluate_retrieval
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
from sbert_nonling.methods.plan import MethodPlan, TrainingStage
from sbert_nonling.methods.sentence_encoder import (
    recipe_label,
    single_run_arguments,
    starting_sentence_model,
    text_contrastive_loss,
    text_training_data,
)
from sbert_nonling.modules.encoder_families import learned_position_embeddings
from sbert_nonling.util.unreachable import loading

logger = logging.getLogger(__name__)


@dataclass
class GroundingPlan(MethodPlan):
    """A grounding method's plan (:class:`MethodPlan`), with the image features its builder extracted.

    Args:
        extracted_features: the captioned images' names and their features (``{"global": (images, d)}`` or
            ``"regions"``; CLIP's also ``"captions"``), as
            :func:`~sbert_nonling.data.image_features.save_image_features` writes them to be read back as
            ``image_features``; None when they were read from ``image_features``.
        extracted_captions: the captions of the rows of ``extracted_features["captions"]`` (CLIP's caption
            embeddings, KDMCSE / DALR), else None.
    """

    extracted_features: tuple[list[str], dict[str, torch.Tensor]] | None = None
    extracted_captions: list[str] | None = None


def _image_features(
    config: GroundingConfig, pairs: list[tuple[str, str]], images: dict[str, Any], image_features: str | Path | None
) -> tuple[list[str], dict[str, torch.Tensor], bool]:
    """Image names, their features, and whether they were extracted now (with ``config.image_encoder``)."""
    kind = "regions" if config.regions else "global"
    if image_features is not None:
        names, features = load_image_features(image_features)
        if kind not in features:
            raise ValueError(
                f"{image_features} holds {sorted(features)} features; {recipe_label(config).lower()} needs {kind!r}."
            )
        extracted = False
    else:
        names = sorted({image for image, _ in pairs})
        offline = (
            "pass precomputed features (image_features=F, --image-features F; made by `sbert-nonling features`), or "
            "set image_encoder to efficientnet-lite0 (--set image_encoder=efficientnet-lite0), whose weights a pip "
            "package ships."
        )
        with loading(
            "Image encoder", config.image_encoder, f"{recipe_label(config)}, setting 'image_encoder'", offline
        ):
            encoder = FrozenImageEncoder.by_name(config.image_encoder)
        features = extract_image_features([images[name] for name in names], encoder, regions=config.regions)
        extracted = True
    if features[kind].shape[-1] != config.image_dimension:
        raise ValueError(
            f"Image features have dimension {features[kind].shape[-1]}, {recipe_label(config).lower()} expects "
            f"image_dimension={config.image_dimension}."
        )
    return names, features, extracted


def split_heldout_pairs(
    pairs: list[tuple[str, str]], heldout_images_file: str | Path | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The training pairs and the held-out pairs (those of the images named in ``heldout_images_file``, one per
    line); a ValueError when it holds none or all of the captioned images.

    Args:
        pairs: ``(image name, caption)`` pairs.
        heldout_images_file: the held-out image names, or None (nothing held out).
    """
    if heldout_images_file is None:
        return pairs, []
    lines = Path(heldout_images_file).read_text(encoding="utf-8").splitlines()
    heldout_names = {line.strip() for line in lines} - {""}
    heldout = [pair for pair in pairs if pair[0] in heldout_names]
    training = [pair for pair in pairs if pair[0] not in heldout_names]
    if not heldout or not training:
        raise ValueError(
            f"{heldout_images_file} must hold some, but not all, of the captioned images ({len(heldout)} held out)."
        )
    return training, heldout


def grounding_pairs(
    config: SentenceEncoderConfig, data: DataSources
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, Any]]:
    """A grounding method's training and held-out ``(image name, caption)`` pairs and each image name's file or Hub
    value, from ``data.captions_file`` (a ValueError when there is none) and ``data.heldout_images_file``.

    Args:
        config: the method's config (named in the errors).
        data: the run's data (``captions_file``, ``image_dir``, ``heldout_images_file``).
    """
    if data.captions_file is None:
        raise ValueError(
            f"{recipe_label(config)} grounds captions in their images: pass captions_file (and image_dir for a local "
            "file)."
        )
    pairs, images = load_caption_pairs(data.captions_file, data.image_dir)
    pairs, heldout_pairs = split_heldout_pairs(pairs, data.heldout_images_file)
    return pairs, heldout_pairs, images


def caption_training_stage(
    args: SentenceTransformerTrainingArguments,
    caption_dataset: Dataset,
    caption_loss: torch.nn.Module,
    text_dataset: Dataset | None,
    text_loss: torch.nn.Module | None,
) -> TrainingStage:
    """The one run of a grounding method: caption batches with ``caption_loss``, interleaved with text batches with
    ``text_loss`` when there is text data (``args`` names the interleaving sampler), else the captions alone.

    Args:
        args: the run's training arguments.
        caption_dataset: the caption batches' dataset.
        caption_loss: their loss.
        text_dataset: the text batches' dataset, or None (captions only).
        text_loss: their loss, or None.
    """
    if text_dataset is None or text_loss is None:
        captions_only = {"train_dataset_name": "captions"}
        return TrainingStage("train", caption_dataset, caption_loss, args, trainer_kwargs=captions_only)
    return TrainingStage(
        "train",
        DatasetDict({"text": text_dataset, "captions": caption_dataset}),
        {"text": text_loss, "captions": caption_loss},
        args,
    )


def heldout_retrieval_set(pairs: list[tuple[str, str]], names: list[str], features: torch.Tensor) -> dict[str, Any]:
    """Captions, caption -> image row and the image features of the held-out pairs, as
    :func:`~sbert_nonling.evaluation.retrieval.evaluate_retrieval` takes them.

    Args:
        pairs: the held-out ``(image name, caption)`` pairs.
        names: the image names, one per row of ``features``.
        features: the image features (images, d).
    """
    images = sorted({image for image, _ in pairs})
    row_of = {name: row for row, name in enumerate(names)}
    missing = [image for image in images if image not in row_of]
    if missing:
        raise ValueError(f"No features for {len(missing)} held-out image(s), e.g. {missing[:3]}.")
    return {
        "captions": [caption for _, caption in pairs],
        "caption_to_image": [images.index(image) for image, _ in pairs],
        "image_features": features[[row_of[image] for image in images]],
    }


def _freeze_position_embeddings(model) -> None:
    encoder = model[0].encoder
    position_embeddings = learned_position_embeddings(encoder.auto_model)
    if position_embeddings is None:
        logger.warning(
            f"freeze_position_embeddings: {encoder.config.model_type} has no learned position embeddings to freeze."
        )
    else:
        position_embeddings.requires_grad_(False)


def build_grounding(config: GroundingConfig, data: DataSources) -> GroundingPlan:
    """MCSE's / MACD's pieces (docs/mcse_macd.md): caption batches (the caption twice + its image's frozen features)
    with :class:`MultimodalAlignLoss` (``config.grounding``), wrapped in :class:`DistillAnchorLoss` when
    ``config.anchor.enabled`` (MACD), beside text batches with :class:`SimCSELoss` (``config.text_loss``) unless
    ``config.data == "captions"``; one run of :class:`NonLinguisticTrainer`.

    Features extracted now (no ``image_features``) are the plan's ``extracted_features``; the ``"retrieval"``
    evaluation scores caption <-> image Recall@1/5 on the held-out images (``{}`` without them). Call
    ``transformers.set_seed(config.seed)`` first to draw the heads as the runner does.

    Args:
        config: :class:`MCSEConfig` or :class:`MACDConfig`.
        data: ``captions_file`` (+ ``image_dir`` for a local file) or a Hub image-caption dataset; optional
            ``image_features`` and ``heldout_images_file``; ``text_file`` / ``nli_file`` and ``sts_dir`` as for
            :func:`~sbert_nonling.methods.simcse.build_simcse`.

    Example::

        import os
        from transformers import set_seed

        from sbert_nonling.configs import MCSEConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_grounding

        data = os.environ["SBERT_NONLING_SHARED"] + "/data"
        captions = open(data + "/corpus/flickr8k/Flickr8k.token.txt").read().splitlines()[:40]  # 8 photos x 5
        open("captions.txt", "w").write("\\n".join(captions) + "\\n")
        # offline: a tiny random BERT and EfficientNet-Lite0 features; e.g. MCSEConfig(): bert-base-uncased, ResNet-50
        config = MCSEConfig(model="tiny:bert", image_encoder="efficientnet-lite0", image_dimension=1280, max_steps=2,
                            batch_size=4)
        set_seed(config.seed)
        plan = build_grounding(config, DataSources(captions_file="captions.txt", image_dir=data + "/images/flickr8k",
                                                   text_file=data + "/corpus/wiki1m_for_simcse.first11913.txt"))
        plan.train("mcse")  # checkpoints in mcse/checkpoints
        print(plan.evaluations["retrieval"](plan.model))  # {} without held-out images
    """
    text_dataset, sentences = text_training_data(config, data.text_file, data.nli_file, captions_only=True)
    pairs, heldout_pairs, images = grounding_pairs(config, data)
    names, features, extracted = _image_features(config, pairs + heldout_pairs, images, data.image_features)
    kind = "regions" if config.regions else "global"
    heldout = heldout_retrieval_set(heldout_pairs, names, features[kind]) if heldout_pairs else None
    caption_dataset = caption_feature_dataset(pairs, names, features[kind], seed=config.seed)

    sentence_model = starting_sentence_model(config, sentences + [caption for _, caption in pairs])
    if config.freeze_position_embeddings:
        _freeze_position_embeddings(sentence_model)
    evaluator = sts_dev_evaluator(data.sts_dir, config.eval_tasks) if data.sts_dir is not None else None
    args = single_run_arguments(
        config,
        evaluator is not None,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        interleaved=text_dataset is not None,
    )
    gather = args.world_size > 1  # under torchrun / accelerate: negatives from every process's batch
    text_loss = None
    if text_dataset is not None:
        text_loss = text_contrastive_loss(sentence_model, config.text_loss, gather)
    grounding = MultimodalAlignLoss(
        sentence_model,
        config.image_dimension,
        text_loss,
        weight=config.grounding.weight,
        direction=config.grounding.direction,
        temperature=config.grounding.temperature,
        projection_dimension=config.grounding.projection_dimension,
        projection_head=config.grounding.projection_head,
        local_weight=config.grounding.local_weight,
        gather_across_devices=gather,
    )
    caption_loss: torch.nn.Module = grounding
    if config.anchor.enabled:
        caption_loss = DistillAnchorLoss(
            sentence_model,
            base_loss=grounding,
            kl_weight=config.anchor.kl_weight,
            cosine_weight=config.anchor.cosine_weight,
            temperature=config.anchor.temperature,
        )
    stage = caption_training_stage(args, caption_dataset, caption_loss, text_dataset, text_loss)

    def retrieval(trained) -> dict[str, float]:
        return evaluate_retrieval(trained, grounding, **heldout) if heldout is not None else {}

    return GroundingPlan(
        sentence_model,
        [stage],
        evaluator,
        evaluations={"retrieval": retrieval},
        extracted_features=(names, features) if extracted else None,
    )
