"""Angular-margin logits: in-batch cosine similarities whose negatives are made harder by an angle (KDMCSE)."""

from __future__ import annotations

import torch
from torch import Tensor


def angular_margin_logits(
    similarities: Tensor, margin: float, temperature: float, soft_labels: Tensor | None = None
) -> Tensor:
    r"""Logits of an in-batch contrastive loss whose negatives are moved ``margin`` radians closer to the query.

    With :math:`\theta_{ij} = \arccos s_{ij}` the angle of query :math:`i` and candidate :math:`j` (the positive on the
    diagonal):

    .. math::

        \ell_{ij} = \frac{1}{\tau} \cos\big(\theta_{ij} - m \, (1 - \alpha_{ij})\big) \quad
            \text{for } i \ne j \text{ and } \theta_{ij} > m, \qquad
        \ell_{ij} = \frac{s_{ij}}{\tau} \text{ otherwise}

    with :math:`\alpha_{ij} = 0` (a constant margin, ArcCSE-like) or a teacher's similarity (KDMCSE's adaptive margin,
    AdapACSE: negatives the teacher finds close to the positive keep their angle). The positive is never changed,
    and neither is a negative already within ``m`` of the query (its angle would go below 0). The gate uses the
    plain margin, as KDMCSE's released code does.

    Paper: KDMCSE, Nguyen et al., NAACL 2024 (https://arxiv.org/abs/2403.17486).

    Args:
        similarities: cosine similarities (B, B) of queries (rows) and candidates (columns), the positive of row
            :math:`i` in column :math:`i`.
        margin: :math:`m`, in radians (KDMCSE: 0.15).
        temperature: :math:`\tau` (0.05).
        soft_labels: :math:`\alpha` (B, B), e.g. a frozen CLIP's image-image similarities; None: a constant margin.

    Returns:
        The logits (B, B), in the dtype of ``similarities``.

    Example::

        import torch
        import torch.nn.functional as F
        from sbert_nonling.losses.angular_margin import angular_margin_logits

        queries, candidates = F.normalize(torch.randn(4, 8), dim=-1), F.normalize(torch.randn(4, 8), dim=-1)
        logits = angular_margin_logits(queries @ candidates.T, margin=0.15, temperature=0.05)
        loss = F.cross_entropy(logits, torch.arange(4))
    """
    eye = torch.eye(similarities.shape[0], similarities.shape[1], dtype=torch.bool, device=similarities.device)
    harder = ~eye & (torch.acos(similarities.clamp(-1.0, 1.0)) > margin)
    shift = margin if soft_labels is None else margin * (1 - soft_labels)
    # Only the moved negatives go through acos, whose slope is infinite at 1: a positive of two identical views
    # (similarity exactly 1) would otherwise get 0 * inf, a NaN gradient, where clamp passes the gradient at its bound
    # (torch before 2.14).
    angles = torch.acos(torch.where(harder, similarities, 0.0).clamp(-1.0, 1.0))
    return torch.where(harder, torch.cos(angles - shift), similarities) / temperature
