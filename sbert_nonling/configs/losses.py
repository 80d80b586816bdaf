"""The settings of each loss a method trains, one typed block per loss, nested in the method's config under the
loss's role (``text_loss``, ``modality_loss``, ``grounding``, ``anchor``, ``heads``) and passed to the loss field by
field. A recipe gives what differs (``"grounding": {"weight": 1.0}``), ``--set`` a dotted key
(``grounding.weight=1``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sbert_nonling.configs.base import Settings, setting
from sbert_nonling.util.choices import (
    ConsistencyMismatch,
    ContrastiveMode,
    Direction,
    FilterScores,
    ListwiseKind,
    PairHead,
    TokenNormalization,
    TrainingHead,
)


@dataclass
class SimCSELossConfig(Settings):
    """The text contrastive loss, :class:`~sbert_nonling.losses.SimCSELoss`: InfoNCE over in-batch positives (and hard
    negatives) at ``temperature``, after an optional training-only head.

    Example::

        from sbert_nonling.configs import SimCSELossConfig

        print(SimCSELossConfig(training_head="none"))  # supervised SimCSE keeps its MLP in the model instead
    """

    temperature: float = setting(0.05, "temperature of the text contrastive softmax (1 / scale)", above=0.0)
    training_head: TrainingHead = setting("mlp", "head used in training only, before the text contrastive loss")
    margin: float = setting(
        0.0, "angular margin on the negatives, in radians (0: none; KDMCSE: 0.15)", minimum=0.0, maximum=math.pi
    )


@dataclass
class ModalityLossConfig(Settings):
    """The contrastive loss on unpaired images or audio, :class:`~sbert_nonling.losses.UnpairedModalityContrastiveLoss`
    (VisualCSE / AudioCSE: SupCon with the class label at temperature 0.07).

    Example::

        from sbert_nonling.configs import ModalityLossConfig

        print(ModalityLossConfig(mode="simclr"))  # two views of each image, no labels
    """

    mode: ContrastiveMode = setting("supcon", "supcon (labels), simclr or released_label_rank")
    temperature: float = setting(0.07, "temperature of the modality contrastive softmax", above=0.0)


@dataclass
class GroundingLossConfig(Settings):
    """The caption <-> image term, :class:`~sbert_nonling.losses.MultimodalAlignLoss`: InfoNCE between projected
    captions and projected frozen image features at ``temperature``, times ``weight``; MACD adds the image -> text
    direction and the word-region (DAMSM) term weighted ``local_weight``.

    Example::

        from sbert_nonling.configs import GroundingLossConfig

        macd = GroundingLossConfig(weight=1.0, direction="symmetric", temperature=0.1, projection_head="linear")
    """

    weight: float = setting(0.01, "weight of the grounding loss", minimum=0.0)
    direction: Direction = setting("text_to_image", "text_to_image (MCSE) or symmetric (MACD)")
    temperature: float = setting(0.05, "temperature of the grounding softmax", above=0.0)
    projection_dimension: int = setting(256, "dimension of the shared grounding space", minimum=1)
    projection_head: TrainingHead = setting(
        "mlp", "kind of the projection heads: mlp (Linear + Tanh, MCSE) or linear (MACD)"
    )
    local_weight: float = setting(0.0, "weight of the word-region (DAMSM) term", minimum=0.0)


@dataclass
class TeacherGuidedAlignConfig(Settings):
    """KDMCSE's caption <-> CLIP term, :class:`~sbert_nonling.losses.TeacherGuidedAlignLoss`: angular-margin InfoNCE
    between projected captions and the projected CLIP embeddings of their images and of themselves, the margin scaled
    by CLIP's own similarities (``adaptive_margin``), negatives CLIP scores above ``filter_threshold`` dropped when
    ``filter`` is set; times ``weight``.

    Example::

        from sbert_nonling.configs import TeacherGuidedAlignConfig

        print(TeacherGuidedAlignConfig(filter=True, filter_threshold=0.9))  # the paper's teacher filter
    """

    weight: float = setting(0.01, "weight of the grounding terms (lambda)", minimum=0.0)
    temperature: float = setting(0.05, "temperature of the grounding softmax", above=0.0)
    margin: float = setting(0.15, "angular margin on the negatives, in radians", minimum=0.0, maximum=math.pi)
    adaptive_margin: bool = setting(True, "scale the margin by 1 - CLIP's similarity of the two targets (AdapACSE)")
    projection_dimension: int = setting(256, "dimension of the shared grounding space", minimum=1)
    filter: bool = setting(False, "drop the negatives CLIP scores above filter_threshold (released scripts: off)")
    filter_threshold: float = setting(
        0.8, "the filter's threshold on CLIP's caption-image score (on its scale: matching pairs' cosines are low)"
    )
    filter_scores: FilterScores = setting("cosine", "the filter's score: cosine (paper) or released_dot_product")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.filter_scores == "cosine" and not -1.0 <= self.filter_threshold <= 1.0:
            raise ValueError(
                f"{self._where()}: filter_threshold={self.filter_threshold} must lie in [-1, 1] with "
                "filter_scores='cosine' (a threshold on a cosine)."
            )


@dataclass
class ListwiseDistillationConfig(Settings):
    """DALR's ranking term, :class:`~sbert_nonling.losses.ListwiseDistillationLoss`: the student's in-batch scores
    (cosine / ``temperature``, an angular ``margin`` on the negatives when set) trained to rank the batch as the text
    teachers' mixed scores (at ``teacher_temperature``) do, by ListMLE or ListNet, times ``weight``.

    Example::

        from sbert_nonling.configs import ListwiseDistillationConfig

        released = ListwiseDistillationConfig(margin=0.18, epsilon=1e-7)  # DALR's released code
    """

    kind: ListwiseKind = setting("listmle", "listwise loss of the ranking term: listmle (DALR) or listnet")
    weight: float = setting(0.2, "weight of the ranking term", minimum=0.0)
    teacher_temperature: float = setting(0.05, "temperature of the teachers' scores", above=0.0)
    temperature: float = setting(0.05, "temperature of the student's scores", above=0.0)
    margin: float = setting(
        0.0, "angular margin of the student's scores, radians (released: 0.18)", minimum=0.0, maximum=math.pi
    )
    epsilon: float = setting(
        0.0, "ListMLE's constant inside the log (released: 1e-7; 0 is the exact likelihood)", minimum=0.0
    )


@dataclass
class DALRLossConfig(Settings):
    """DALR's alignment terms, :class:`~sbert_nonling.losses.DALRLoss`: the KL to the teachers' similarities
    (``intra_modal_weight``) and to CLIP's image similarities (``cross_modal_weight``) and the caption-image
    consistency (``consistency_weight``), at the released weights; the released code's two extra terms
    (``image_grounding_weight`` 0.1, ``token_grounding_weight`` 0.2) are off. The builder groups these keys into the
    loss's settings: ``SoftAlignment`` (the two KL weights, ``kl_temperature``, ``kl_target_temperature``),
    ``Consistency`` (``consistency_*``), ``ImageGrounding`` (``image_*``, ``projection_dimension``) and
    ``TokenGrounding`` (``token_*``).

    Example::

        from sbert_nonling.configs import DALRLossConfig

        released = DALRLossConfig(
            consistency_mismatch="released_roll", image_grounding_weight=0.1, token_grounding_weight=0.2,
            token_normalization="released_token",
        )  # with the ranking block's and text_loss's margin 0.18 and epsilon 1e-7: the released total
    """

    intra_modal_weight: float = setting(0.2, "weight of the KL to the teachers' similarities", minimum=0.0)
    cross_modal_weight: float = setting(0.1, "weight of the KL to CLIP's image similarities", minimum=0.0)
    consistency_weight: float = setting(0.001, "weight of the caption-image consistency term", minimum=0.0)
    image_grounding_weight: float = setting(0.0, "weight of the released image grounding term", minimum=0.0)
    token_grounding_weight: float = setting(0.0, "weight of the released teacher-token term", minimum=0.0)
    kl_temperature: float = setting(0.45, "temperature of the student's side of the KL terms", above=0.0)
    kl_target_temperature: float = setting(0.5, "temperature of the targets' side of the KL terms", above=0.0)
    consistency_margin: float = setting(
        0.2, "cosine margin of the mismatched caption-image pairs", minimum=-1.0, maximum=1.0
    )
    consistency_mismatch: ConsistencyMismatch = setting(
        "shuffle", "how captions get another image: shuffle (paper) or roll (released, by 5)"
    )
    consistency_dimension: int = setting(256, "width of the consistency aligners", minimum=1)
    projection_dimension: int = setting(256, "width of the image grounding space", minimum=1)
    image_margin: float = setting(
        0.18, "adaptive angular margin of the image grounding term", minimum=0.0, maximum=math.pi
    )
    image_temperature: float = setting(0.05, "temperature of the image grounding term", above=0.0)
    token_normalization: TokenNormalization = setting(
        "feature", "axis the token term normalises the teachers' tokens over: feature, or token (released)"
    )


@dataclass
class AnchorConfig(Settings):
    """The anchor to a frozen copy of the starting model, :class:`~sbert_nonling.losses.DistillAnchorLoss` (MACD):
    ``kl_weight`` x T^2 x KL of the in-batch similarity distributions at temperature T, plus ``cosine_weight`` x the
    mean token cosine distance, added to the grounding loss when ``enabled``.

    Example::

        from sbert_nonling.configs import AnchorConfig

        print(AnchorConfig(enabled=True))  # MACD's anchor: KL weight 5 at T = 2, token cosine weight 1
    """

    enabled: bool = setting(False, "anchor to a frozen copy of the starting model (MACD)")
    kl_weight: float = setting(5.0, "weight of the anchor's KL term", minimum=0.0)
    cosine_weight: float = setting(1.0, "weight of the anchor's token cosine term", minimum=0.0)
    temperature: float = setting(2.0, "distillation temperature of the anchor's KL term", above=0.0)


@dataclass
class TaskHeadsConfig(Settings):
    """The training-only task heads of the multi-task stage (:func:`~sbert_nonling.methods.task_losses`): a hidden
    ReLU layer with dropout per head (shared by the pair tasks when ``share_head_layer``), and the pair classifier.

    Example::

        from sbert_nonling.configs import TaskHeadsConfig

        print(TaskHeadsConfig(hidden_dimension=128, pair_head="concat"))
    """

    hidden_dimension: int = setting(768, "hidden size of the task heads", minimum=1)
    dropout: float = setting(0.3, "dropout of the task heads", minimum=0.0, maximum=1.0)
    share_head_layer: bool = setting(True, "share the first head layer between the pair tasks")
    pair_head: PairHead = setting("bilinear", "pair classifier: bilinear or concat")


@dataclass
class SymmetricInfoNCEConfig(Settings):
    """The pair loss of Pixel Linguist, :class:`~sbert_nonling.losses.SymmetricInfoNCE`: InfoNCE in both directions
    at ``temperature``, on the mean of the patch tokens after a training-only ``token_head``.

    Example::

        from sbert_nonling.configs import SymmetricInfoNCEConfig

        print(SymmetricInfoNCEConfig(token_head="none"))  # the model's own sentence embedding
    """

    temperature: float = setting(0.05, "temperature of the symmetric InfoNCE softmax", above=0.0)
    token_head: TrainingHead = setting(
        "linear_gelu_layernorm", "training-only head on every patch token before pooling, or none"
    )
