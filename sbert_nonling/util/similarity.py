"""The cosine-similarity matrix the losses score with: sentence-transformers' ``cos_sim`` without ``to_dense()``."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def cosine_similarity(a: Tensor, b: Tensor) -> Tensor:
    """The cosine similarity of every row of ``a`` with every row of ``b``: ``result[i, j] = cos(a[i], b[j])``.

    Both sides are L2-normalised, then multiplied: the numbers of sentence-transformers' ``cos_sim`` on dense float32
    / float64 tensors, which ends in ``Tensor.to_dense()`` (for its sparse inputs). Torch 2.11 and 2.12 drop the
    gradient of ``to_dense()`` in a compiled graph, so a compiled loss scoring with ``cos_sim`` would come back without
    a gradient there; the package's losses score with this function instead (as ``MultipleNegativesRankingLoss``'s
    ``similarity_fct`` where they build on it). Unlike ``cos_sim`` it leaves the dtype to its caller (``cos_sim``
    upcasts half-precision inputs): the losses call it inside
    :func:`~sbert_nonling.util.precision.float32_math`.

    Args:
        a: dense embeddings (N, d).
        b: dense embeddings (M, d), of the dtype of ``a``.

    Returns:
        The similarities (N, M), in the dtype of the inputs.

    Example::

        import torch
        from sentence_transformers.util import cos_sim
        from sbert_nonling.util.similarity import cosine_similarity

        queries, documents = torch.randn(4, 8), torch.randn(6, 8)
        assert cosine_similarity(queries, documents).shape == (4, 6)
        torch.testing.assert_close(cosine_similarity(queries, documents), cos_sim(queries, documents))
    """
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T
