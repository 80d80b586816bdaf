"""DALR as a plan: caption batches distilled from frozen text teachers (their ranking and similarities) and from a
frozen CLIP's image similarities, beside sentence batches."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.util import is_sentence_transformer_model

from sbert_nonling.configs.dalr import DALRConfig
from sbert_nonling.data.sources import DataSources
from sbert_nonling.losses.dalr import Consistency, DALRLoss, ImageGrounding, SoftAlignment, TokenGrounding
from sbert_nonling.losses.listwise_distillation import ListwiseDistillationLoss
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.methods.clip_teacher import build_clip_grounding
from sbert_nonling.methods.grounding import GroundingPlan
from sbert_nonling.methods.sentence_encoder import recipe_label
from sbert_nonling.models.sentence_model import build_sentence_model
from sbert_nonling.models.tiny_encoder import resolve_model
from sbert_nonling.util.unreachable import loading

#: What to do without the network when a text teacher cannot be loaded.
TEACHERS_OFFLINE = (
    "copy the teachers' folders here and name them (--set 'teachers=[\"path/a\", \"path/b\"]'), or train the recipe's "
    "tiny form (--tiny: small random teachers)."
)


def load_text_teachers(config: DALRConfig, sentences: list[str]) -> list[SentenceTransformer]:
    """DALR's frozen text teachers, by Hub name, folder or tiny model name (``config.teachers``, each resolved by
    :func:`resolve_model`; [CLS] pooling, as DALR's released code pools its SimCSE and DiffCSE teachers, unless a
    sentence-transformers model brings its own): a ``tiny:bert`` teacher is a small random BERT whose vocabulary comes
    from ``sentences`` (the student's, so the teachers read the student's tokens), its weights drawn from
    ``config.seed + 1 +`` its index. A teacher that cannot be loaded raises one ValueError line naming it.

    Args:
        config: :class:`DALRConfig`.
        sentences: the training sentences and captions.
    """
    teachers = []
    for index, name in enumerate(config.teachers):
        with resolve_model(name, sentences, seed=config.seed + 1 + index) as resolved:
            with loading("Teacher", name, f"{recipe_label(config)}, setting 'teachers'", TEACHERS_OFFLINE):
                own_pooling = is_sentence_transformer_model(resolved)
                teachers.append(build_sentence_model(resolved, None if own_pooling else "cls", config.max_seq_length))
    return teachers


def build_dalr(config: DALRConfig, data: DataSources) -> GroundingPlan:
    """DALR's pieces (:func:`~sbert_nonling.methods.clip_teacher.build_clip_grounding`): caption batches (the caption
    twice + the CLIP embeddings of its image and of itself) with :class:`DALRLoss` (``config.alignment``) around
    :class:`ListwiseDistillationLoss` (``config.ranking``; the frozen ``config.teachers`` run on-line) beside text
    batches with :class:`SimCSELoss` (``config.text_loss``) unless ``config.data == "captions"``; one run of
    :class:`NonLinguisticTrainer` that interleaves them, each dataset's last shorter batch of an epoch left out (DALR's
    terms need two captions or more). Call ``transformers.set_seed(config.seed)`` first to draw the heads as the
    runner does.

    Args:
        config: :class:`DALRConfig`.
        data: ``captions_file`` (+ ``image_dir`` for a local file) or a Hub image-caption dataset; optional
            ``image_features`` (CLIP's); ``text_file`` / ``nli_file`` and ``sts_dir`` as for
            :func:`~sbert_nonling.methods.simcse.build_simcse`.

    Example::

        import os
        from pathlib import Path

        from transformers import set_seed

        from sbert_nonling.configs import DALRConfig
        from sbert_nonling.data import DataSources
        from sbert_nonling.methods import build_dalr

        data = Path(os.environ["SBERT_NONLING_SHARED"]) / "data"
        tokens = (data / "corpus" / "flickr8k" / "Flickr8k.token.txt").read_text().splitlines()
        Path("captions.txt").write_text("\\n".join(tokens[:40]) + "\\n")  # 8 photos x 5 captions
        # offline: tiny random BERTs (student, teachers) and CLIP; e.g. DALRConfig(): bert-base-uncased, the released
        # SimCSE and DiffCSE teachers, CLIP ViT-L/14 (its cross-modal term needs CLIP's width, the student's: 128)
        config = DALRConfig(model="tiny:bert", teachers=["tiny:bert", "tiny:bert"], clip_encoder="tiny:clip",
                            clip_dimension=128, data="captions", max_steps=2, batch_size=4)
        set_seed(config.seed)
        plan = build_dalr(config, DataSources(captions_file="captions.txt", image_dir=data / "images" / "flickr8k"))
        plan.train("dalr")  # captions only: every batch is distilled from the tiny random teachers and CLIP
    """
    ranking, settings = config.ranking, config.alignment

    def alignment(model: SentenceTransformer, text_loss: SimCSELoss, sentences: list[str]) -> DALRLoss:
        ranking_loss = ListwiseDistillationLoss(
            model,
            load_text_teachers(config, sentences),
            config.teacher_weights,
            ranking.kind,
            temperature=ranking.temperature,
            teacher_temperature=ranking.teacher_temperature,
            margin=ranking.margin,
            weight=ranking.weight,
            epsilon=ranking.epsilon,
            text_loss=text_loss,
        )
        return DALRLoss(
            model,
            ranking_loss,
            config.clip_dimension,
            alignment=SoftAlignment(
                intra_modal_weight=settings.intra_modal_weight,
                cross_modal_weight=settings.cross_modal_weight,
                temperature=settings.kl_temperature,
                target_temperature=settings.kl_target_temperature,
            ),
            consistency=Consistency(
                weight=settings.consistency_weight,
                margin=settings.consistency_margin,
                mismatch=settings.consistency_mismatch,
                dimension=settings.consistency_dimension,
            ),
            image_grounding=ImageGrounding(
                weight=settings.image_grounding_weight,
                margin=settings.image_margin,
                temperature=settings.image_temperature,
                projection_dimension=settings.projection_dimension,
            ),
            token_grounding=TokenGrounding(
                weight=settings.token_grounding_weight, normalization=settings.token_normalization
            ),
        )

    return build_clip_grounding(config, data, alignment, drop_last_batch=True)  # a batch of 1 has no negatives
