"""KDMCSE as a plan: captions grounded in a frozen CLIP's image and caption embeddings, whose similarities set the
margins and the negatives, beside sentence batches."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer

from sbert_nonling.configs.kdmcse import KDMCSEConfig
from sbert_nonling.data.sources import DataSources
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.losses.teacher_guided_align import TeacherGuidedAlignLoss
from sbert_nonling.methods.clip_teacher import build_clip_grounding
from sbert_nonling.methods.grounding import GroundingPlan


def build_kdmcse(config: KDMCSEConfig, data: DataSources) -> GroundingPlan:
    """KDMCSE's pieces (:func:`~sbert_nonling.methods.clip_teacher.build_clip_grounding`): caption batches (the
    caption twice + the CLIP embeddings of its image and of itself) with :class:`TeacherGuidedAlignLoss`
    (``config.grounding``) beside text batches with :class:`SimCSELoss` (``config.text_loss``, its angular margin)
    unless ``config.data == "captions"``; one run of :class:`NonLinguisticTrainer` that interleaves them.

    The CLIP embeddings are read from ``image_features`` (``sbert-nonling features --encoder clip-vit-large-patch14
    --captions FILE``) or computed now with ``config.clip_encoder`` (the plan's ``extracted_features`` and
    ``extracted_captions``). The ``"retrieval"`` evaluation scores caption <-> image Recall@1/5 on the held-out images
    in the loss's shared space (``{}`` without them). Call ``transformers.set_seed(config.seed)`` first to draw the
    heads as the runner does.

    Args:
        config: :class:`KDMCSEConfig`.
        data: ``captions_file`` (+ ``image_dir`` for a local file) or a Hub image-caption dataset; optional
            ``image_features`` (CLIP's) and ``heldout_images_file``; ``text_file`` / ``nli_file`` and ``sts_dir`` as
            for :func:`~sbert_nonling.methods.simcse.build_simcse`.

    Example::

        import os
        from transformers import set_seed

        from sbert_nonling.configs import KDMCSEConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_kdmcse

        data = os.environ["SBERT_NONLING_SHARED"] + "/data"
        captions = open(data + "/corpus/flickr8k/Flickr8k.token.txt").read().splitlines()[:40]  # 8 photos x 5
        open("captions.txt", "w").write("\\n".join(captions) + "\\n")
        # offline: a tiny random BERT and CLIP; e.g. KDMCSEConfig(): bert-base-uncased, CLIP ViT-L/14
        config = KDMCSEConfig(model="tiny:bert", clip_encoder="tiny:clip", clip_dimension=32, max_steps=2,
                              batch_size=4)
        set_seed(config.seed)
        plan = build_kdmcse(config, DataSources(captions_file="captions.txt", image_dir=data + "/images/flickr8k",
                                                text_file=data + "/corpus/wiki1m_for_simcse.first11913.txt"))
        plan.train("kdmcse")  # checkpoints in kdmcse/checkpoints
    """
    settings = config.grounding

    def grounding(model: SentenceTransformer, text_loss: SimCSELoss, sentences: list[str]) -> TeacherGuidedAlignLoss:
        return TeacherGuidedAlignLoss(
            model,
            config.clip_dimension,
            text_loss,
            weight=settings.weight,
            temperature=settings.temperature,
            margin=settings.margin,
            adaptive_margin=settings.adaptive_margin,
            projection_dimension=settings.projection_dimension,
            filter_threshold=settings.filter_threshold if settings.filter else None,
            filter_scores=settings.filter_scores,
        )

    return build_clip_grounding(config, data, grounding)
