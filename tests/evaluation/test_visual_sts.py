"""Visual STS: sentences rendered as square images and read through the image route."""

from __future__ import annotations

import pytest
from PIL import Image

from sbert_nonling import ImagePatchEmbed
from sbert_nonling.evaluation.sts_data import load_sts_dir
from sbert_nonling.evaluation.visual_sts import evaluate_visual_sts, render_as_image
from sbert_nonling.models import build_sentence_model
from sbert_nonling.modules.pixel_renderer import PixelRenderer


def test_visual_sts_reads_rendered_sentences_through_the_image_route(tiny_encoder_dir, tiny_model, small_sts_dir):
    image = render_as_image(PixelRenderer(max_patches=16), "A man is playing a guitar.")
    assert image.size == (64, 64) and image.mode == "RGB"
    assert min(Image.Image.getdata(image.convert("L"))) == 0  # ink (and the EOS patch) made it into the square
    model = build_sentence_model(
        tiny_encoder_dir, pooling="mean", front_ends={"image": ImagePatchEmbed(image_size=32, embedding_dimension=32)}
    )
    stsb = load_sts_dir(small_sts_dir, "dev", tasks=("STSBenchmark",))
    scores = evaluate_visual_sts(model, stsb, max_patches=16)
    assert set(scores) == {"VisualSTSBenchmark", "avg"} and -100 <= scores["avg"] <= 100
    with pytest.raises(ValueError, match="needs an 'image' route"):
        evaluate_visual_sts(tiny_model, stsb)
