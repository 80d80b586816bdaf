"""Loss math in float32 under mixed precision: autocast off and half-precision tensors upcast for one region."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import torch
from torch import Tensor


@contextmanager
def float32_math(*tensors: Tensor) -> Iterator[list[Tensor]]:
    """Yields ``tensors`` in at least float32, with autocast switched off on their device for the ``with`` block.

    Losses compute their similarities, logits, softmax / logsumexp and KL terms inside it, so that bf16 / fp16
    autocast speeds up the encoder without rounding the loss; float32 / float64 tensors pass unchanged, and without
    autocast the block changes nothing. Further reading: docs/reliability.md, "Mixed precision".

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
    # torch 2.11's compiler cannot trace is_autocast_available (a graph break in every loss); the devices a loss is
    # compiled on (CPU, CUDA) all have autocast, so a compiled region switches it off without asking
    switchable = torch.compiler.is_compiling() or torch.amp.is_autocast_available(device_type)
    with torch.autocast(device_type, enabled=False) if switchable else nullcontext():
        yield [tensor.to(torch.promote_types(tensor.dtype, torch.float32)) for tensor in tensors]
