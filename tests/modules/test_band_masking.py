import pytest
import torch
import torchaudio

from sbert_nonling.modules.band_masking import BandMasking


@pytest.mark.parametrize(
    ("axis", "reference"),
    [("frequency", torchaudio.transforms.FrequencyMasking), ("time", torchaudio.transforms.TimeMasking)],
)
@pytest.mark.parametrize("width", [1, 48, 192])
def test_it_masks_the_bands_torchaudio_masks_from_the_same_seed(axis, reference, width):
    spectrogram = torch.randn(3, 128, 256)
    for seed in range(20):
        torch.manual_seed(seed)
        expected = reference(width)(spectrogram)
        torch.manual_seed(seed)
        torch.testing.assert_close(BandMasking(width, axis)(spectrogram), expected, rtol=0, atol=0)


def test_width_zero_masks_nothing_and_an_unknown_axis_is_refused():
    spectrogram = torch.randn(1, 8, 8)
    assert BandMasking(0, "time")(spectrogram) is spectrogram
    with pytest.raises(ValueError, match="axis='mel'"):
        BandMasking(4, "mel")


def test_it_compiles_without_a_graph_break():
    explanation = torch._dynamo.explain(BandMasking(48, "frequency"))(torch.randn(2, 128, 64))
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)
