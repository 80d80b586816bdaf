"""Patch dropout (FLIP): train on a random subset of a front-end's patch tokens, the leading [CLS] token always
kept."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def check_token_keep_ratio(token_keep_ratio: float) -> float:
    """``token_keep_ratio`` as a float in (0, 1], or a ValueError naming the bad value.

    Args:
        token_keep_ratio: the share of patch tokens a view keeps.
    """
    if isinstance(token_keep_ratio, bool) or not isinstance(token_keep_ratio, (int, float)):
        raise ValueError(
            f"token_keep_ratio={token_keep_ratio!r} must be a number in (0, 1] (1.0 keeps every patch token)."
        )
    if not 0.0 < token_keep_ratio <= 1.0 or math.isnan(token_keep_ratio):
        raise ValueError(f"token_keep_ratio={token_keep_ratio!r} must be in (0, 1] (1.0 keeps every patch token).")
    return float(token_keep_ratio)


def kept_patch_count(num_patches: int, token_keep_ratio: float) -> int:
    """How many of ``num_patches`` patch tokens a view keeps: ``round(ratio x num_patches)``, at least one.

    Args:
        num_patches: the patch tokens of a view, [CLS] not counted.
        token_keep_ratio: the share kept, in (0, 1].
    """
    return max(1, min(num_patches, round(token_keep_ratio * num_patches)))


def drop_patch_tokens(tokens: Tensor, token_keep_ratio: float) -> Tensor:
    r"""Keep the [CLS] token and a random ``token_keep_ratio`` share of the patch tokens of every row (FLIP).

    Each row of ``tokens`` (B, 1 + N, D) keeps its first token and :math:`K = \max(1, \mathrm{round}(r N))` patch
    tokens drawn uniformly without replacement, in order: (B, 1 + K, D); position embeddings must already be added. The
    draw uses the global torch generator of ``tokens``' device, like dropout (timm / open_clip: ``PatchDropout``).

    Args:
        tokens: (B, 1 + N, D), [CLS] first.
        token_keep_ratio: share of the N patch tokens kept, in (0, 1]; 1.0 returns ``tokens`` unchanged.

    References:
        - Li et al., 2023, Scaling Language-Image Pre-training via Masking (https://arxiv.org/abs/2212.00794).

    Example::

        import torch
        from sbert_nonling.util.patch_dropout import drop_patch_tokens

        tokens = torch.randn(4, 1 + 196, 768)
        drop_patch_tokens(tokens, 0.5).shape  # torch.Size([4, 99, 768]): [CLS] + 98 patches per row
    """
    if token_keep_ratio >= 1.0:
        return tokens
    rows, length, width = tokens.shape
    patches = length - 1
    keep = kept_patch_count(patches, token_keep_ratio)
    kept = (
        torch.rand(rows, patches, device=tokens.device).topk(keep, dim=1).indices.sort(dim=1).values + 1
    )  # (B, K) positions, [CLS] is 0
    kept = torch.cat([torch.zeros(rows, 1, dtype=kept.dtype, device=kept.device), kept], dim=1)  # (B, 1 + K)
    return tokens.gather(1, kept.unsqueeze(-1).expand(-1, -1, width))
