"""Run a recipe end to end: build the model, score STS dev, train with SentenceTransformerTrainer, save, export."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict
from sentence_transformers.base.modules import InputModule
from sentence_transformers.util import is_sentence_transformer_model
from transformers import set_seed

from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex
from sbert_nonling.data.captions import caption_feature_dataset, load_caption_pairs
from sbert_nonling.data.hub import AUDIO_ROLES, hub_source
from sbert_nonling.data.image_features import extract_image_features, load_image_features, save_image_features
from sbert_nonling.data.images import image_folder_dataset
from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset
from sbert_nonling.evaluation.retrieval import evaluate_retrieval
from sbert_nonling.evaluation.sts import evaluate_sts_dir, sts_dev_evaluator
from sbert_nonling.export.text_model import export_text_model
from sbert_nonling.losses.distill_anchor import DistillAnchorLoss
from sbert_nonling.losses.multimodal_align import MultimodalAlignLoss
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss
from sbert_nonling.models.sentence_model import build_sentence_model
from sbert_nonling.models.tiny_encoder import build_tiny_encoder
from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
from sbert_nonling.modules.encoder_families import learned_position_embeddings
from sbert_nonling.modules.frozen_image_encoder import FrozenImageEncoder
from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed
from sbert_nonling.modules.shared_encoder import SharedEncoder
from sbert_nonling.training.arguments import dev_curve, training_arguments
from sbert_nonling.training.multitask import train_multitask
from sbert_nonling.training.output_folder import prepare_output_dir
from sbert_nonling.training.pixel_linguist import train_pixel_linguist
from sbert_nonling.training.recipes import get_recipe
from sbert_nonling.training.run_record import training_data_lines, write_run_record
from sbert_nonling.training.trainer import NonLinguisticTrainer
from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer

logger = logging.getLogger(__name__)


def _text_data(recipe: str, settings: dict[str, Any], text_file, nli_file) -> tuple[Dataset | None, list[str]]:
    if settings["data"] == "captions":
        return None, []
    if settings["data"] == "text":
        if text_file is None:
            raise ValueError(f"Recipe {recipe!r} trains on plain sentences: pass text_file (one sentence per line).")
        sentences = read_sentences(text_file)
        return sentence_pairs_dataset(sentences), sentences
    if settings["data"] == "nli":
        if nli_file is None:
            raise ValueError(f"Recipe {recipe!r} trains on NLI triplets: pass nli_file (sent0,sent1,hard_neg CSV).")
        triplets = read_nli_triplets(nli_file)
        return nli_triplets_dataset(triplets), [sentence for triplet in triplets for sentence in triplet]
    raise ValueError(f"Recipe {recipe!r} has an unknown data kind {settings['data']!r}.")


def _grounding_data(
    recipe: str, settings: dict[str, Any], captions_file, image_dir, image_features, heldout_images_file, output_dir: Path
) -> tuple[Dataset, list[str], dict[str, Any] | None]:
    """Caption pairs joined with frozen image features: loaded from ``image_features`` (``sbert-nonling features``)
    or extracted now with the recipe's encoder and kept in ``output_dir/image_features.safetensors``. Images listed in
    ``heldout_images_file`` are kept out of training and returned (all their captions) for retrieval evaluation."""
    if captions_file is None:
        raise ValueError(f"Recipe {recipe!r} grounds captions in their images: pass captions_file (and image_dir for a local file).")
    pairs, images = load_caption_pairs(captions_file, image_dir)
    heldout_names = set()
    if heldout_images_file is not None:
        heldout_names = {line.strip() for line in Path(heldout_images_file).read_text(encoding="utf-8").splitlines() if line.strip()}
    heldout_pairs = [pair for pair in pairs if pair[0] in heldout_names]
    pairs = [pair for pair in pairs if pair[0] not in heldout_names]
    if heldout_images_file is not None and (not heldout_pairs or not pairs):
        raise ValueError(f"{heldout_images_file} must hold some, but not all, of the captioned images ({len(heldout_pairs)} held out).")
    kind = "regions" if settings["regions"] else "global"
    if image_features is not None:
        names, features = load_image_features(image_features)
        if kind not in features:
            raise ValueError(f"{image_features} holds {sorted(features)} features; recipe {recipe!r} needs {kind!r}.")
    else:
        names = sorted({image for image, _ in pairs + heldout_pairs})
        encoder = FrozenImageEncoder.by_name(settings["image_encoder"])
        features = extract_image_features([images[name] for name in names], encoder, regions=settings["regions"])
        save_image_features(output_dir / "image_features.safetensors", names, features)
    if features[kind].shape[-1] != settings["image_dim"]:
        raise ValueError(f"Image features have dimension {features[kind].shape[-1]}, recipe {recipe!r} expects image_dim={settings['image_dim']}.")
    heldout = None
    if heldout_pairs:
        images = sorted({image for image, _ in heldout_pairs})
        row_of = {name: row for row, name in enumerate(names)}
        missing = [image for image in images if image not in row_of]
        if missing:
            raise ValueError(f"No features for {len(missing)} held-out image(s), e.g. {missing[:3]}.")
        heldout = {
            "captions": [caption for _, caption in heldout_pairs],
            "caption_to_image": [images.index(image) for image, _ in heldout_pairs],
            "image_features": features[kind][[row_of[image] for image in images]],
        }
    dataset = caption_feature_dataset(pairs, names, features[kind], seed=settings["seed"])
    return dataset, [caption for _, caption in pairs], heldout


def _modality_data(
    recipe: str, settings: dict[str, Any], encoder: SharedEncoder, tiny: bool, image_dir, audio_dir, audio_label_regex
) -> tuple[Dataset, InputModule]:
    """The unpaired modality dataset and its front-end (random for tiny runs, else from the recipe's checkpoint)."""
    hidden_size, entry = encoder.get_embedding_dimension(), settings["encoder_entry"]
    if settings["modality"] == "image":
        if image_dir is None:
            raise ValueError(f"Recipe {recipe!r} trains on unpaired images: pass image_dir (one sub-folder per class).")
        dataset, _ = image_folder_dataset(image_dir, img_size=settings["img_size"], limit_per_class=settings["images_per_class"])
        keep = settings["token_keep_ratio"]
        if tiny or settings["vit"] is None:  # a random patch embedding, trained from scratch
            front_end = ImagePatchEmbed(
                settings["img_size"], settings["patch_size"], embed_dim=hidden_size, encoder_entry=entry, token_keep_ratio=keep
            )
        else:  # positions interpolated if img_size differs from the checkpoint's
            front_end = ImagePatchEmbed.from_vit(settings["vit"], encoder_entry=entry, img_size=settings["img_size"], token_keep_ratio=keep)
        return dataset, front_end
    if settings["modality"] == "audio":
        if audio_dir is None or (audio_label_regex is None and hub_source(audio_dir, AUDIO_ROLES) is None):
            raise ValueError(
                f"Recipe {recipe!r} trains on unpaired audio: pass audio_dir and audio_label_regex (a pattern whose first "
                "group is the class, e.g. r'^\\d+_([a-z]+)_' for FSDD speakers or r'^(\\d+)-' for LibriSpeech), or a Hub "
                "audio dataset as audio_dir (its label column gives the classes)."
            )
        label_fn = label_from_regex(audio_label_regex) if audio_label_regex is not None else None
        dataset, _ = audio_folder_dataset(audio_dir, label_fn, limit=settings["clips"])
        front_end = AudioPatchEmbed(
            target_frames=settings["target_frames"], embed_dim=hidden_size, layout=settings["audio_layout"],
            encoder_entry=entry, freq_mask=settings["freq_mask"], time_mask=settings["time_mask"],
            token_keep_ratio=settings["token_keep_ratio"],
        )
        return dataset, front_end
    raise ValueError(f"Recipe {recipe!r} has an unknown modality {settings['modality']!r}.")


def _grounding_losses(
    model, settings: dict[str, Any], text_loss: SimCSELoss | None, gather: bool
) -> tuple[MultimodalAlignLoss, MultimodalAlignLoss | DistillAnchorLoss]:
    """The grounding loss (whose heads give the retrieval space) and the loss to train with: the same, or it wrapped
    in the anchor (MACD)."""
    grounding = MultimodalAlignLoss(
        model,
        image_dim=settings["image_dim"],
        text_loss=text_loss,
        weight=settings["grounding_weight"],
        direction=settings["grounding_direction"],
        temperature=settings["grounding_temperature"],
        projection_dim=settings["projection_dim"],
        head_activation=settings["head_activation"],
        local_weight=settings["local_weight"],
        gather_across_devices=gather,
    )
    if not settings["anchor"]:
        return grounding, grounding
    return grounding, DistillAnchorLoss(
        model,
        base_loss=grounding,
        kl_weight=settings["anchor_kl_weight"],
        cosine_weight=settings["anchor_cosine_weight"],
        distillation_temperature=settings["anchor_temperature"],
    )


def train_recipe(
    recipe: str,
    output_dir: str | Path,
    text_file: str | Path | None = None,
    nli_file: str | Path | None = None,
    sts_dir: str | Path | None = None,
    image_dir: str | Path | None = None,
    audio_dir: str | Path | None = None,
    audio_label_regex: str | None = None,
    captions_file: str | Path | None = None,
    image_features: str | Path | None = None,
    heldout_images_file: str | Path | None = None,
    stsb_multi_dir: str | Path | None = None,
    model: str | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    overrides: dict[str, Any] | None = None,
    resume: bool = False,
    bf16: bool = False,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Train ``recipe`` and leave ``output_dir/model`` (full model), ``output_dir/export`` (plain text checkpoint),
    each with a model card, ``output_dir/checkpoints`` (trainer checkpoints), ``output_dir/recipe.json`` (the settings
    used) and ``output_dir/results.json`` (the returned result).

    With ``sts_dir`` the dev tasks found there (STS-B dev, SICK trial) are scored before and after training, STS-B dev
    is evaluated every ``eval_steps`` steps and the best checkpoint on it is kept (``load_best_model_at_end``).
    Recipes with a ``modality`` (visualcse, audiocse) add an unpaired image / audio dataset, its front-end route and
    its :class:`UnpairedModalityContrastiveLoss`, and train with :class:`UnpairedModalityTrainer` (scheme
    ``alternating`` or ``joint`` from the recipe). Grounding recipes (mcse, macd) add caption batches with
    :class:`MultimodalAlignLoss` (interleaved with text batches as MCSE does), optionally anchored to a frozen copy of
    the starting model with :class:`DistillAnchorLoss` (MACD). The pixel-linguist recipe runs its curriculum with
    :func:`~sbert_nonling.training.pixel_linguist.train_pixel_linguist`.

    Args:
        recipe: a name from :func:`~sbert_nonling.training.recipes.list_recipes`.
        output_dir: run folder.
        text_file: one sentence per line (recipes with ``"data": "text"``).
        nli_file: SimCSE-format NLI triplets CSV (recipes with ``"data": "nli"``).
        sts_dir: SentEval-layout STS folder for dev evaluation and model selection.
        image_dir: images in one sub-folder per class (image recipes).
        audio_dir, audio_label_regex: audio files and the pattern whose first group of the file name is the class.
        captions_file: image-caption pairs (Flickr token file, CSV or JSONL) for grounding recipes (mcse, macd), whose
            images are in ``image_dir``.
        image_features: precomputed features of those images (``sbert-nonling features``); default: extracted now.

    Every data argument (``text_file``, ``nli_file``, ``image_dir``, ``audio_dir``, ``captions_file``) may instead name
    a Hugging Face dataset, ``"owner/name?split=...&config=...&ROLE=COLUMN"`` (:mod:`sbert_nonling.data.hub`; see
    docs/data.md for the Hub datasets that match each paper's data). A Hub image-caption dataset brings its images:
    no ``image_dir``. A Hub audio dataset labels clips by its label column: no ``audio_label_regex``.
        heldout_images_file: image names, one per line (e.g. Flickr_8k.testImages.txt), kept out of training; their
            caption <-> image Recall@1/5 after training is returned under ``"retrieval"`` (as MCSE reports).
        stsb_multi_dir: stsb_multi_mt files (pixel-linguist: multilingual STS-B dev scores and, with leapfrogging,
            parallel training pairs from the ``train`` files).
        model: Hub name or folder of the starting encoder; default: the recipe's (bert-base-uncased). A
            sentence-transformers model (all-MiniLM-L6-v2, all-mpnet-base-v2, bge-*, e5-*, gte-*, a decoder
            embedder) is continued with its own Pooling, Dense, Normalize and prompts (the recipe's ``pooling``
            applies only when overridden explicitly, e.g. ``overrides={"pooling": "mean"}``); see
            :func:`~sbert_nonling.models.sentence_model.build_sentence_model`.
        tiny: start from a small random encoder built offline from the training text (see ``build_tiny_encoder``)
            and use the recipe's ``tiny`` hyper-parameters.
        max_steps: stop after this many optimizer steps (overrides the recipe; pixel-linguist: per stage run).
        overrides: other recipe settings to override, e.g. ``{"learning_rate": 1e-5}``.
        resume: continue an interrupted run in the same ``output_dir`` from its newest intact checkpoint (model,
            per-modality optimizers and schedules, loss heads, data position, RNG states); the result is the run
            an uninterrupted call would have given. Not for pixel-linguist and multitask, whose stages restart.
            A folder with no complete checkpoint, or with a finished run, is refused with a ValueError.
        overwrite: replace the finished (or interrupted) run ``output_dir`` may hold; without it such a folder is
            refused with a ValueError before anything is written (:func:`prepare_output_dir`).
        bf16: train under bf16 autocast (GPU or CPU), instead of the recipe's ``fp16`` (which applies on a GPU
            only). On a CPU with native bf16 matmul (AVX-512 BF16 / AMX) ~2.8x faster than fp32; on other CPUs
            (AVX2) emulated and 30x slower or worse, which is logged as a warning (docs/benchmarks.md, item 4).

    Image recipes whose ``vit`` setting is None (``overrides={"vit": None}``) start from a random patch embedding
    of ``img_size`` / ``patch_size`` instead of a ViT checkpoint's (tiny runs always do).

    Raises:
        CheckpointWriteError: writing a checkpoint failed (disk full, no permission); earlier checkpoints are
            intact, resume once the cause is fixed.
        TrainingPreempted: SIGTERM / SIGINT stopped training after writing a complete checkpoint; resume continues.

    Returns:
        ``{"recipe", "model", "export", "dev_before", "dev_after", "best_checkpoint", "global_step", "retrieval",
        "dev_curve", "train_seconds", "step_seconds", "step_counts"}``: ``dev_curve`` is ``[[step, STS-B dev], ...]``
        of the evaluations during training; ``step_seconds`` / ``step_counts`` the forward + backward time and the
        number of batches per training dataset (see :class:`NonLinguisticTrainer`).
    """
    settings = get_recipe(recipe, tiny=tiny, overrides=overrides)
    settings["bf16"] = bf16
    if tiny and model is not None:
        raise ValueError("Pass either tiny=True (a locally built encoder) or model=..., not both.")
    if settings["method"] == "pixel_linguist":
        if resume:
            raise ValueError("resume is not supported by pixel-linguist (a curriculum of runs); start it again.")
        for stage in ("visual", "topical", "reasoning", "parallel"):
            if max_steps is not None:  # every stage stops after at most max_steps
                settings[f"{stage}_max_steps"] = min(settings[f"{stage}_max_steps"], max_steps)
        return train_pixel_linguist(settings, output_dir, text_file, nli_file, sts_dir, stsb_multi_dir, model, overwrite=overwrite)
    if settings["method"] == "multitask":
        if resume:
            raise ValueError("resume is not supported by multitask (two stage runs); start it again.")
        return train_multitask(settings, output_dir, text_file, nli_file, sts_dir, model, max_steps=max_steps, overwrite=overwrite)
    if max_steps is not None:
        settings["max_steps"] = max_steps
    output_dir = prepare_output_dir(output_dir, resume=resume, overwrite=overwrite)
    set_seed(settings["seed"])  # front-ends and loss heads are initialised before the trainer seeds anything
    text_dataset, sentences = _text_data(recipe, settings, text_file, nli_file)
    caption_dataset, heldout = None, None
    if "image_encoder" in settings:
        caption_dataset, captions, heldout = _grounding_data(
            recipe, settings, captions_file, image_dir, image_features, heldout_images_file, output_dir
        )
        sentences = sentences + captions
    encoder_path = str(build_tiny_encoder(output_dir / "tiny-encoder", sentences, seed=settings["seed"])) if tiny else (
        model or settings["model"]
    )
    # A sentence-transformers model keeps its own Pooling / Dense / Normalize unless the pooling is set explicitly.
    keep_own_modules = not tiny and "pooling" not in (overrides or {}) and is_sentence_transformer_model(encoder_path)
    sentence_model = build_sentence_model(
        encoder_path, pooling=None if keep_own_modules else settings["pooling"], max_seq_length=settings["max_seq_length"]
    )
    encoder = sentence_model[0].encoder
    if settings.get("freeze_position_embeddings"):
        position_embeddings = learned_position_embeddings(encoder.auto_model)
        if position_embeddings is None:
            logger.warning(f"freeze_position_embeddings: {encoder.config.model_type} has no learned position embeddings to freeze.")
        else:
            position_embeddings.requires_grad_(False)
    modality = settings.get("modality")
    modality_dataset = None
    if modality:
        modality_dataset, front_end = _modality_data(recipe, settings, encoder, tiny, image_dir, audio_dir, audio_label_regex)
        sentence_model[0].add_route(modality, front_end)
    dev_before = evaluate_sts_dir(sentence_model, sts_dir, "dev") if sts_dir else {}

    evaluating = sts_dir is not None
    joint = modality is not None and settings["scheme"] == "joint"
    args = training_arguments(settings, output_dir, evaluating, joint, interleaved=text_dataset is not None and caption_dataset is not None)
    gather = args.world_size > 1  # under torchrun / accelerate: negatives from every process's batch
    common = {"model": sentence_model, "args": args, "evaluator": sts_dev_evaluator(sts_dir) if evaluating else None}
    text_loss = None
    if text_dataset is not None:
        text_loss = SimCSELoss(
            sentence_model, temperature=settings["temperature"], training_head=settings["training_head"], gather_across_devices=gather
        )
    if modality is not None:
        modality_loss = UnpairedModalityContrastiveLoss(
            sentence_model, mode=settings["modality_mode"], temperature=settings["modality_temperature"], gather_across_devices=gather
        )
        trainer = UnpairedModalityTrainer(
            **common,
            train_dataset=DatasetDict({modality: modality_dataset, "text": text_dataset}),
            loss={modality: modality_loss, "text": text_loss},
            scheme=settings["scheme"],
            batch_sizes={modality: settings["modality_batch_size"]},
            learning_rates={} if joint else {modality: settings["modality_learning_rate"]},
            weights={modality: settings["modality_weight"]} if joint else {},
        )
    elif caption_dataset is not None:
        grounding, caption_loss = _grounding_losses(sentence_model, settings, text_loss, gather)
        if text_dataset is None:
            trainer = NonLinguisticTrainer(**common, train_dataset=caption_dataset, loss=caption_loss)
        else:
            trainer = NonLinguisticTrainer(
                **common,
                train_dataset=DatasetDict({"text": text_dataset, "captions": caption_dataset}),
                loss={"text": text_loss, "captions": caption_loss},
            )
    else:
        trainer = NonLinguisticTrainer(**common, train_dataset=text_dataset, loss=text_loss)
    train_output = trainer.train(resume_from_checkpoint=True if resume else None)

    dev_after = evaluate_sts_dir(sentence_model, sts_dir, "dev") if sts_dir else {}
    sentence_model.save(str(output_dir / "model"))
    export_text_model(sentence_model, output_dir / "export")
    retrieval = {}
    if heldout is not None:
        retrieval = evaluate_retrieval(sentence_model, grounding, **heldout)
    result = {
        "retrieval": retrieval,
        "recipe": recipe,
        "model": str(output_dir / "model"),
        "export": str(output_dir / "export"),
        "dev_before": dev_before,
        "dev_after": dev_after,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "global_step": trainer.state.global_step,
        "dev_curve": dev_curve(trainer.state.log_history),
        "train_seconds": train_output.metrics["train_runtime"],
        "step_seconds": dict(trainer.step_seconds),
        "step_counts": dict(trainer.step_counts),
    }
    data = training_data_lines(
        text_file=text_file, nli_file=nli_file, image_dir=image_dir, audio_dir=audio_dir, captions_file=captions_file,
        image_features=image_features,
    )
    write_run_record(output_dir, settings, result, {"model": "full", "export": "text"}, data)
    return result
