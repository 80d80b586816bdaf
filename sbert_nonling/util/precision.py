"""Loss math in float32 under mixed precision: autocast off and half-precision tensors upcast for one region."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import torch
from torch import Tensor


@contextmanager
def float32_math(*tensors: Tensor) -> Iterator[list[Tensor]]:
    """Yields ``tensors`` in at least float32, with autocast switched off on their device for the ``with`` block.

    Under ``torch.autocast`` matrix products come out in float16 / bfloat16, and the ops after them stay there (on CPU
    softmax, logsumexp, exp and cosines too; on CUDA logsumexp): about 3 significant digits, so a logit just below
    1 / temperature = 20 is rounded to 0.125 (bfloat16), a cosine near 1 to 0.004, and a zero vector normalises to NaN
    in float16 (its epsilon underflows). An upcast alone does not help: autocast casts the next matrix product down
    again. Losses therefore compute their similarities, logits, softmax / logsumexp / exp, KL divergences and
    regression cosines inside this block; the layers before them (encoder, training heads) keep running in half
    precision.

    Float32 and float64 tensors pass unchanged (the same objects), and without autocast the block changes nothing, so
    full-precision training computes bit for bit what it computed without it. Gradients flow back to the inputs in
    their own dtype.

    Example::

        import torch
        import torch.nn.functional as F
        from sbert_nonling.util.precision import float32_math

        anchors, positives = torch.randn(4, 8), torch.randn(4, 8)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with float32_math(anchors, positives) as (anchors, positives):
                logits = F.normalize(anchors, dim=-1) @ F.normalize(positives, dim=-1).T / 0.05
        assert logits.dtype == torch.float32
    """
    device_type = tensors[0].device.type
    has_autocast = torch.amp.is_autocast_available(device_type)
    with torch.autocast(device_type, enabled=False) if has_autocast else nullcontext():
        yield [tensor.to(torch.promote_types(tensor.dtype, torch.float32)) for tensor in tensors]
