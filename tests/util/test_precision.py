"""float32_math: autocast off and half-precision tensors upcast inside the block, everything else untouched."""

from __future__ import annotations

import pytest
import torch

from sbert_nonling.util.precision import float32_math


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_inside_autocast_the_block_computes_in_float32_and_gradients_return_in_the_input_dtype(dtype):
    a, b = torch.randn(3, 4).to(dtype).requires_grad_(), torch.randn(5, 4).to(dtype).requires_grad_()
    with torch.autocast("cpu", dtype=dtype):
        assert (a.float() @ b.float().T).dtype == dtype  # what autocast does to a plain upcast
        with float32_math(a, b) as (a32, b32):
            assert not torch.is_autocast_enabled("cpu")
            logits = a32 @ b32.T / 0.05
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == dtype  # restored
    assert (a32.dtype, b32.dtype, logits.dtype) == (torch.float32, torch.float32, torch.float32)
    torch.testing.assert_close(logits, a.float() @ b.float().T / 0.05)
    logits.sum().backward()
    assert a.grad.dtype == dtype and b.grad.dtype == dtype


def test_full_precision_tensors_pass_unchanged_and_without_autocast_nothing_is_switched():
    single, double = torch.randn(2, 3), torch.randn(2, 3, dtype=torch.float64)
    with float32_math(single, double) as (inside_single, inside_double):
        assert not torch.is_autocast_enabled("cpu")
    assert inside_single is single and inside_double is double  # the same tensors: float32 results stay bit-identical
    assert not torch.is_autocast_enabled("cpu")
