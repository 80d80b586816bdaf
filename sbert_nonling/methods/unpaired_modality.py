"""VisualCSE / AudioCSE (Jian et al., 2022) as a plan: SimCSE on sentences plus contrastive steps on unpaired images
or audio read by the same encoder."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset, DatasetDict
from sentence_transformers.base.modules import InputModule, Transformer

from sbert_nonling.configs.audiocse import AudioCSEConfig
from sbert_nonling.configs.unpaired_modality import UnpairedModalityConfig
from sbert_nonling.configs.visualcse import VisualCSEConfig
from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex
from sbert_nonling.data.hub import AUDIO_ROLES, hub_source
from sbert_nonling.data.images import image_folder_dataset
from sbert_nonling.data.sources import DataSources
from sbert_nonling.evaluation.sts import sts_dev_evaluator
from sbert_nonling.losses.unpaired_modality_contrastive import UnpairedModalityContrastiveLoss
from sbert_nonling.methods.plan import MethodPlan, TrainingStage
from sbert_nonling.methods.sentence_encoder import (
    recipe_label,
    single_run_arguments,
    starting_sentence_model,
    text_contrastive_loss,
    text_training_data,
)
from sbert_nonling.modules.audio_patch_embed import AudioPatchEmbed
from sbert_nonling.modules.image_patch_embed import ImagePatchEmbed
from sbert_nonling.modules.modality_router import ModalityRouter
from sbert_nonling.training.unpaired_trainer import UnpairedModalityTrainer
from sbert_nonling.util.unreachable import loading

#: What to do when the recipe's ViT cannot be reached.
VIT_OFFLINE = (
    "set vit to None (--set vit=null) for a random patch embedding, or to a local ViT folder (--set vit=PATH), or "
    "train with --tiny."
)


def _image_route(
    config: VisualCSEConfig, hidden_size: int, image_dir: str | Path | None
) -> tuple[Dataset, InputModule]:
    if image_dir is None:
        raise ValueError(
            f"{recipe_label(config)} trains on unpaired images: pass image_dir (one sub-folder per class)."
        )
    dataset, _ = image_folder_dataset(image_dir, image_size=config.image_size, limit_per_class=config.images_per_class)
    if config.vit is None:  # a random patch embedding, trained from scratch (a tiny run's)
        front_end = ImagePatchEmbed(
            image_size=config.image_size,
            patch_size=config.patch_size,
            embedding_dimension=hidden_size,
            encoder_entry=config.encoder_entry,
            token_keep_ratio=config.token_keep_ratio,
        )
    else:  # positions interpolated if image_size differs from the checkpoint's
        with loading("ViT", config.vit, f"{recipe_label(config)}, setting 'vit'", VIT_OFFLINE):
            front_end = ImagePatchEmbed.from_vit(
                config.vit,
                image_size=config.image_size,
                encoder_entry=config.encoder_entry,
                token_keep_ratio=config.token_keep_ratio,
            )
    return dataset, front_end


def _audio_route(
    config: AudioCSEConfig, hidden_size: int, audio_dir: str | Path | None, audio_label_regex: str | None
) -> tuple[Dataset, InputModule]:
    if audio_dir is None or (audio_label_regex is None and hub_source(audio_dir, AUDIO_ROLES) is None):
        raise ValueError(
            f"{recipe_label(config)} trains on unpaired audio: pass audio_dir and audio_label_regex (a pattern "
            "whose first group is the class, e.g. r'^\\d+_([a-z]+)_' for FSDD speakers or r'^(\\d+)-' for "
            "LibriSpeech), or a Hub audio dataset as audio_dir (its label column gives the classes)."
        )
    label_fn = label_from_regex(audio_label_regex) if audio_label_regex is not None else None
    dataset, _ = audio_folder_dataset(audio_dir, label_fn, limit=config.clips, limit_per_class=config.clips_per_class)
    return dataset, AudioPatchEmbed(
        target_frames=config.target_frames,
        embedding_dimension=hidden_size,
        layout=config.layout,
        encoder_entry=config.encoder_entry,
        freq_mask=config.freq_mask,
        time_mask=config.time_mask,
        token_keep_ratio=config.token_keep_ratio,
    )


def build_unpaired_modality(config: UnpairedModalityConfig, data: DataSources) -> MethodPlan:
    """VisualCSE's / AudioCSE's pieces (docs/visualcse.md): the sentence model with a second route
    (``config.modality``: :class:`ImagePatchEmbed` or :class:`AudioPatchEmbed`) into the same encoder, text batches
    with :class:`SimCSELoss` and unpaired batches (two views + class) with :class:`UnpairedModalityContrastiveLoss`;
    one run of :class:`UnpairedModalityTrainer` (alternating steps with their own optimizers, or ``scheme="joint"``).
    Call ``transformers.set_seed(config.seed)`` first to draw the front-end and heads as the runner does.

    Args:
        config: :class:`VisualCSEConfig` (images) or :class:`AudioCSEConfig` (audio).
        data: ``text_file`` / ``nli_file`` and ``sts_dir`` as for :func:`~sbert_nonling.methods.simcse.build_simcse`;
            ``image_dir`` (one sub-folder per class, or a Hub dataset) or ``audio_dir`` + ``audio_label_regex``.

    Example::

        import os
        import transformers

        from sbert_nonling.configs import VisualCSEConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_unpaired_modality

        data = os.environ["SBERT_NONLING_SHARED"] + "/data"
        # offline: a tiny random BERT and patch embedding; e.g. VisualCSEConfig(max_steps=500): bert-base, ViT-B/16
        config = VisualCSEConfig(model="tiny:bert", vit=None, image_size=32, patch_size=8, max_steps=2, batch_size=8,
                                 images_per_class=2, modality_batch_size=4)
        transformers.set_seed(config.seed)
        plan = build_unpaired_modality(config, DataSources(text_file=data + "/corpus/wiki1m_for_simcse.first11913.txt",
                                                           image_dir=data + "/images/cifar10/train"))  # e.g. ImageNet
        plan.train("visualcse-bert")  # UnpairedModalityTrainer; checkpoints in visualcse-bert/checkpoints
        plan.model.save("visualcse-bert/model")  # text and image routes; export_text_model(...): the text route
    """
    text_dataset, sentences = text_training_data(config, data.text_file, data.nli_file)
    sentence_model = starting_sentence_model(config, sentences)
    router = sentence_model[0]
    assert isinstance(router, ModalityRouter)  # build_sentence_model starts every model with a ModalityRouter
    encoder = router.encoder
    assert isinstance(encoder, Transformer)  # build_sentence_model's routes end in a SharedEncoder
    hidden_size = encoder.get_embedding_dimension()
    if config.modality == "image" and isinstance(config, VisualCSEConfig):
        modality_dataset, front_end = _image_route(config, hidden_size, data.image_dir)
    elif config.modality == "audio" and isinstance(config, AudioCSEConfig):
        modality_dataset, front_end = _audio_route(config, hidden_size, data.audio_dir, data.audio_label_regex)
    else:
        raise ValueError(
            f"{recipe_label(config)}: modality={config.modality!r} needs its front-end's settings: image with a "
            f"VisualCSEConfig, audio with an AudioCSEConfig (got a {type(config).__name__})."
        )
    router.add_route(config.modality, front_end)

    evaluator = sts_dev_evaluator(data.sts_dir, config.eval_tasks) if data.sts_dir is not None else None
    joint = config.scheme == "joint"
    args = single_run_arguments(config, evaluator is not None, gradient_accumulation_steps=2 if joint else 1)
    gather = args.world_size > 1  # under torchrun / accelerate: negatives from every process's batch
    text_loss = text_contrastive_loss(sentence_model, config.text_loss, gather)
    modality_loss = UnpairedModalityContrastiveLoss(
        sentence_model,
        mode=config.modality_loss.mode,
        temperature=config.modality_loss.temperature,
        gather_across_devices=gather,
    )
    stage = TrainingStage(
        "train",
        DatasetDict({config.modality: modality_dataset, "text": text_dataset}),
        {config.modality: modality_loss, "text": text_loss},
        args,
        trainer_class=UnpairedModalityTrainer,
        trainer_kwargs={
            "scheme": config.scheme,
            "batch_sizes": {config.modality: config.modality_batch_size},
            "learning_rates": {} if joint else {config.modality: config.modality_learning_rate},
            "weights": {config.modality: config.modality_weight} if joint else {},
        },
    )
    return MethodPlan(sentence_model, [stage], evaluator)
