"""BandMasking: SpecAugment's frequency or time masking, with no Python branch on tensor values."""

from __future__ import annotations

from typing import Literal, get_args

import torch
from torch import Tensor, nn

#: The spectrogram axis a :class:`BandMasking` masks.
Axis = Literal["frequency", "time"]


class BandMasking(nn.Module):
    """SpecAugment's masking of one band of a spectrogram (Park et al., 2019): a band of ``width`` x U(0, 1) rows
    (``axis="frequency"``) or columns (``axis="time"``) starting at U(0, 1) x (length - band width) is set to 0, the
    same band for every item of the batch.

    The draws are those of torchaudio's ``FrequencyMasking(width)`` / ``TimeMasking(width)`` (two ``torch.rand(1)``
    from the CPU generator, band ``[floor(start), floor(start) + floor(size))``), so a seeded run masks the same
    bands. What it adds: torchaudio checks the drawn band with a Python ``if`` on tensor values, which
    ``torch.compile`` cannot trace (a graph break in every audio step); this module has no such branch (the band is
    shorter than ``width`` by construction).

    Args:
        width: the largest band, in rows or columns (0: no masking).
        axis: ``"frequency"`` (the second last dimension) or ``"time"`` (the last).

    Inputs: a spectrogram ``(..., frequency, time)``. Output: the masked spectrogram, same shape.

    Example::

        import torch
        from sbert_nonling.modules.band_masking import BandMasking

        fbank = torch.randn(2, 128, 1024)  # (batch, mel bins, frames)
        masked = BandMasking(192, "time")(fbank)  # up to 191 frames set to 0 in both clips
    """

    def __init__(self, width: int, axis: Axis) -> None:
        super().__init__()
        if axis not in get_args(Axis):
            raise ValueError(f"axis={axis!r} must be one of {list(get_args(Axis))}.")
        self.width = width
        self.axis = axis

    def forward(self, spectrogram: Tensor) -> Tensor:
        if self.width < 1:
            return spectrogram
        dimension = -2 if self.axis == "frequency" else -1
        length = spectrogram.shape[dimension]
        size = torch.rand(1) * self.width
        start = torch.rand(1) * (length - size)
        first = start.long().squeeze()
        end = (start.long() + size.long()).squeeze()
        positions = torch.arange(length, device=spectrogram.device, dtype=spectrogram.dtype)
        band = (positions >= first) & (positions < end)
        if self.axis == "frequency":
            band = band.unsqueeze(-1)
        return spectrogram.masked_fill(band, 0.0)

    def extra_repr(self) -> str:
        return f"width={self.width}, axis={self.axis!r}"
