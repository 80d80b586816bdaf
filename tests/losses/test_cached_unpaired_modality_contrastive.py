"""The GradCache image loss equals the plain one: loss value and every gradient (encoder, front-end, head)."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from sbert_nonling import CachedUnpairedModalityContrastiveLoss, ImagePatchEmbed, UnpairedModalityContrastiveLoss
from sbert_nonling.models import build_sentence_model


@pytest.fixture
def image_model(tiny_encoder_dir):
    torch.manual_seed(0)
    return build_sentence_model(
        tiny_encoder_dir, pooling="cls", front_ends={"image": ImagePatchEmbed(32, 8, embedding_dimension=32)}
    )


def image_views(model, count: int = 6):
    generator = torch.Generator().manual_seed(3)
    images = [Image.fromarray((torch.rand(32, 32, 3, generator=generator) * 255).byte().numpy()) for _ in range(count)]
    return model.preprocess(images), model.preprocess(images[::-1])


def gradients(model, loss, views, labels):
    model.zero_grad(set_to_none=True)
    loss.zero_grad(set_to_none=True)
    value = loss([dict(view) for view in views], labels)
    value.backward()
    return value.detach(), {
        name: parameter.grad.clone() for name, parameter in loss.named_parameters() if parameter.grad is not None
    }


@pytest.mark.parametrize("mode", ["supcon", "simclr"])
@pytest.mark.parametrize("mini_batch_size", [1, 4, 64])
def test_cached_loss_and_gradients_equal_the_plain_loss(image_model, mode, mini_batch_size):
    image_model.eval()  # no dropout: both losses see the same embeddings
    views, labels = image_views(image_model), torch.tensor([0, 1, 0, 1, 2, 2])
    plain = UnpairedModalityContrastiveLoss(image_model, mode=mode)
    cached = CachedUnpairedModalityContrastiveLoss(image_model, mode=mode, mini_batch_size=mini_batch_size)
    cached.head.load_state_dict(plain.head.state_dict())
    plain_value, plain_grads = gradients(image_model, plain, views, labels)
    cached_value, cached_grads = gradients(image_model, cached, views, labels)
    torch.testing.assert_close(cached_value, plain_value, rtol=1e-5, atol=1e-6)
    assert set(cached_grads) == set(plain_grads) and any("patch" in name or "proj" in name for name in plain_grads)
    for name, grad in plain_grads.items():
        torch.testing.assert_close(cached_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("token_keep_ratio", [1.0, 0.5])
def test_cached_loss_replays_dropout_in_training(tiny_encoder_dir, token_keep_ratio):
    """In train mode the second (gradient) forward must replay the first's dropout masks and kept patch tokens (patch
    dropout): the gradients then equal those of one plain forward under the same RNG state, which a replay with fresh
    masks or other kept tokens would not give."""
    torch.manual_seed(0)
    front_end = ImagePatchEmbed(32, 8, embedding_dimension=32, token_keep_ratio=token_keep_ratio)
    image_model = build_sentence_model(tiny_encoder_dir, pooling="cls", front_ends={"image": front_end})
    image_model.train()
    views, labels = image_views(image_model, count=4), torch.tensor([0, 1, 0, 1])
    cached = CachedUnpairedModalityContrastiveLoss(
        image_model, mode="supcon", mini_batch_size=8
    )  # one mini-batch per view
    plain = UnpairedModalityContrastiveLoss(image_model, mode="supcon")
    plain.head.load_state_dict(cached.head.state_dict())

    def separate_views(loss_views, loss_labels):  # the plain loss, one forward per view, like GradCache's step 1
        embeddings = [image_model(dict(view))["sentence_embedding"] for view in loss_views]
        return plain.compute_loss_from_embeddings([plain.head(embedding) for embedding in embeddings], loss_labels)

    torch.manual_seed(11)
    cached_value, cached_grads = gradients(image_model, cached, views, labels)
    torch.manual_seed(11)
    image_model.zero_grad(set_to_none=True)
    plain_value = separate_views(views, labels)
    plain_value.backward()
    torch.testing.assert_close(cached_value, plain_value.detach(), rtol=1e-5, atol=1e-6)
    encoder_grads = {name: grad for name, grad in cached_grads.items() if name.startswith("model.")}
    assert len(encoder_grads) > 10
    for name, parameter in plain.named_parameters():
        if name in encoder_grads:
            torch.testing.assert_close(encoder_grads[name], parameter.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_bad_settings_and_inputs_are_named(image_model):
    with pytest.raises(ValueError, match="mini_batch_size"):
        CachedUnpairedModalityContrastiveLoss(image_model, mini_batch_size=0)
    loss = CachedUnpairedModalityContrastiveLoss(image_model)
    view, _ = image_views(image_model, count=2)
    with pytest.raises(ValueError, match="two view columns"):
        loss([view], torch.tensor([0, 1]))
    assert loss.get_config_dict()["mini_batch_size"] == 8 and "gao2021scaling" in loss.citation
