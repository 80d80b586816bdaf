"""forward_views: one merged forward for same-kind views, split back per view, equal to separate forwards."""

import torch
from PIL import Image

from sbert_nonling import ImagePatchEmbed
from sbert_nonling.models import build_sentence_model
from sbert_nonling.util.views import forward_views, merge_views

SENTENCES = ["A man is playing a guitar.", "Two dogs run across a wide green field.", "Rain."]


def count_forwards(model) -> list[int]:
    calls = []
    model[0].register_forward_hook(lambda *_: calls.append(1))
    return calls


def assert_outputs_match(merged, separate):
    for merged_output, separate_output in zip(merged, separate, strict=True):
        for key in ("sentence_embedding", "token_embeddings"):
            torch.testing.assert_close(merged_output[key], separate_output[key], rtol=1e-5, atol=1e-5)


def test_text_views_take_one_forward_and_match_separate_forwards(tiny_model):
    tiny_model.eval()
    views = [tiny_model.preprocess(SENTENCES), tiny_model.preprocess(SENTENCES[::-1])]
    calls = count_forwards(tiny_model)
    merged = forward_views(tiny_model, views)
    assert len(calls) == 1
    separate = [tiny_model(tiny_model.preprocess(SENTENCES)), tiny_model(tiny_model.preprocess(SENTENCES[::-1]))]
    for merged_output, separate_output in zip(merged, separate, strict=True):
        torch.testing.assert_close(
            merged_output["sentence_embedding"], separate_output["sentence_embedding"], rtol=1e-5, atol=1e-5
        )
        width = separate_output["token_embeddings"].shape[1]  # merged views are padded to the wider one
        torch.testing.assert_close(
            merged_output["token_embeddings"][:, :width], separate_output["token_embeddings"], rtol=1e-5, atol=1e-5
        )


def test_image_views_of_one_size_merge_and_match(tiny_encoder_dir):
    model = build_sentence_model(
        tiny_encoder_dir, pooling="mean", front_ends={"image": ImagePatchEmbed(32, 8, embedding_dimension=32)}
    )
    model.eval()
    images = [Image.new("RGB", (32, 32), color) for color in ("red", "navy", "white")]
    views = [model.preprocess(images), model.preprocess(images[::-1])]
    assert merge_views(views)["pixel_values"].shape == (6, 3, 32, 32)
    calls = count_forwards(model)
    merged = forward_views(model, views)
    assert len(calls) == 1
    assert_outputs_match(merged, [model(model.preprocess(images)), model(model.preprocess(images[::-1]))])


def test_views_that_cannot_merge_take_separate_forwards(tiny_model):
    tiny_model.eval()
    assert (
        merge_views([tiny_model.preprocess(SENTENCES), {**tiny_model.preprocess(SENTENCES), "extra": torch.zeros(3)}])
        is None
    )
    views = [tiny_model.preprocess(SENTENCES[:2]), tiny_model.preprocess(SENTENCES)]  # different batch sizes
    assert merge_views(views) is None
    calls = count_forwards(tiny_model)
    outputs = forward_views(tiny_model, views)
    assert len(calls) == 2
    assert_outputs_match(
        outputs, [tiny_model(tiny_model.preprocess(SENTENCES[:2])), tiny_model(tiny_model.preprocess(SENTENCES))]
    )
