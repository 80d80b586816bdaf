from __future__ import annotations

import math

import pytest
import torch

from sbert_nonling import MultimodalAlignLoss, SimCSELoss
from sbert_nonling.losses.multimodal_align import damsm_scores

VIEWS = [torch.tensor([[1.0, 0.0, 0.5], [0.2, 1.0, 0.0]]), torch.tensor([[0.9, 0.1, 0.4], [0.0, 1.0, 0.3]])]
IMAGES = torch.tensor([[1.0, 0.2, 0.0], [0.1, 0.8, 0.6]])


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def cross_entropy(logits, target):
    return -(logits[target] - math.log(sum(math.exp(value) for value in logits)))


def identity_loss(tiny_model, **kwargs):
    """Heads set to the identity, so the loss works directly on the 3-wide toy embeddings."""
    loss = MultimodalAlignLoss(tiny_model, image_dimension=3, projection_dimension=3, projection_head="linear", **kwargs)
    loss.text_head[0] = torch.nn.Linear(3, 3)  # the tiny model is 32 wide; the toy views are 3 wide
    with torch.no_grad():
        for head in (loss.text_head[0], loss.image_head[0]):
            head.weight.copy_(torch.eye(3))
            head.bias.zero_()
    return loss


@pytest.mark.parametrize(("direction", "temperature"), [("text_to_image", 0.05), ("symmetric", 0.1)])
def test_grounding_matches_the_hand_computed_value(tiny_model, direction, temperature):
    loss = identity_loss(tiny_model, weight=0.5, direction=direction, temperature=temperature)
    terms = loss.compute_loss_from_outputs([{"sentence_embedding": view} for view in VIEWS], IMAGES)
    symmetric = direction == "symmetric"
    ces = []
    for view in VIEWS:
        texts, imgs = view.tolist(), IMAGES.tolist()
        ces.append(sum(cross_entropy([cosine(texts[i], imgs[j]) / temperature for j in range(2)], i) for i in range(2)) / 2)
        if symmetric:
            ces.append(sum(cross_entropy([cosine(imgs[j], texts[i]) / temperature for i in range(2)], j) for j in range(2)) / 2)
    assert set(terms) == {"grounding"}
    assert terms["grounding"].item() == pytest.approx(0.5 * sum(ces) / len(ces), rel=1e-5)


def test_simcse_term_is_the_shared_text_loss(tiny_model):
    simcse = SimCSELoss(tiny_model, training_head="none")
    loss = identity_loss(tiny_model, text_loss=simcse)
    terms = loss.compute_loss_from_outputs([{"sentence_embedding": view} for view in VIEWS], IMAGES)
    torch.testing.assert_close(terms["simcse"], simcse.compute_loss_from_embeddings(VIEWS, None))


def test_damsm_scores_match_a_loop(tiny_model):
    torch.manual_seed(0)
    words, regions = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    gamma1, gamma2, gamma3 = 1.0, 5.0, 10.0
    scores = damsm_scores(words, mask, regions, (gamma1, gamma2, gamma3))
    for i in range(2):
        for j in range(2):
            relevances = []
            for t in range(3):
                if not mask[i, t]:
                    continue
                sims = torch.nn.functional.cosine_similarity(words[i, t][None], regions[j], dim=-1)
                alpha = torch.softmax(gamma1 * sims, dim=0)
                context = (alpha[:, None] * torch.nn.functional.normalize(regions[j], dim=-1)).sum(0)
                relevances.append(torch.nn.functional.cosine_similarity(context, words[i, t], dim=0))
            expected = gamma3 * torch.log(torch.exp(gamma2 * torch.stack(relevances)).sum()) / gamma2
            torch.testing.assert_close(scores[i, j], expected, rtol=1e-5, atol=1e-5)


def test_local_term_runs_on_region_features_in_a_real_forward(tiny_model):
    tiny_model.train()
    loss = MultimodalAlignLoss(tiny_model, image_dimension=6, local_weight=1.0, direction="symmetric")
    features = [tiny_model.preprocess(["a dog runs on grass", "two men cook"]) for _ in range(2)]
    terms = loss(features, torch.randn(2, 4, 6))
    assert set(terms) == {"grounding", "local"} and all(torch.isfinite(value) for value in terms.values())
    sum(terms.values()).backward()
    assert loss.word_head.weight.grad is not None and loss.region_head.weight.grad is not None


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (None, r"needs image features \(B, d\)"),
        (torch.randn(3, 8), "features for 3 images but 2 captions"),
        (torch.randn(2, 5), "dimension 5, but the loss was built with image_dimension=8"),
    ],
)
def test_bad_pairs_are_rejected(tiny_model, labels, message):
    loss = MultimodalAlignLoss(tiny_model, image_dimension=8)
    with pytest.raises(ValueError, match=message):
        loss([tiny_model.preprocess(["a", "b"])] * 2, labels)


def test_settings_are_checked_and_configured(tiny_model):
    with pytest.raises(ValueError, match="direction='both' must be"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, direction="both")
    with pytest.raises(ValueError, match="local_weight > 0 needs region features"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, local_weight=1.0)([tiny_model.preprocess(["a", "b"])] * 2, torch.randn(2, 8))
    config = MultimodalAlignLoss(tiny_model, image_dimension=8).get_config_dict()
    assert config["weight"] == 0.01 and config["temperature"] == 0.05 and config["projection_dimension"] == 256
    assert "zhang2022mcse" in MultimodalAlignLoss(tiny_model, image_dimension=8).citation


def test_projection_heads_take_the_training_head_kinds_and_the_former_names_still_work(tiny_model):
    mcse, macd = (MultimodalAlignLoss(tiny_model, image_dimension=8, projection_head=kind) for kind in ("mlp", "linear"))
    assert [type(module) for module in mcse.text_head] == [torch.nn.Linear, torch.nn.Tanh]
    assert [type(module) for module in macd.image_head] == [torch.nn.Linear]
    assert mcse.get_config_dict()["projection_head"] == "mlp" and macd.get_config_dict()["image_dimension"] == 8
    with pytest.raises(ValueError, match="projection_head='none' must be one of"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, projection_head="none")
    with pytest.warns(FutureWarning) as caught:
        former = MultimodalAlignLoss(tiny_model, image_dim=8, projection_dim=4, head_activation="none")
    assert {str(warning.message).split(")")[0] for warning in caught} == {
        "MultimodalAlignLoss(image_dim=...",
        "MultimodalAlignLoss(projection_dim=...",
        "MultimodalAlignLoss(head_activation='none'",
    }
    assert (former.image_dimension, former.projection_dimension, former.projection_head) == (8, 4, "linear")
    torch.manual_seed(0)
    renamed = MultimodalAlignLoss(tiny_model, image_dimension=8, projection_dimension=4, projection_head="linear")
    torch.manual_seed(0)
    with pytest.warns(FutureWarning):
        former = MultimodalAlignLoss(tiny_model, image_dim=8, projection_dim=4, head_activation="none")
    assert renamed.state_dict().keys() == former.state_dict().keys()  # the same heads, so old checkpoints load
    assert all(torch.equal(renamed.state_dict()[key], former.state_dict()[key]) for key in renamed.state_dict())
    with pytest.raises(ValueError, match="pass image_dimension=... only"):
        MultimodalAlignLoss(tiny_model, image_dimension=8, image_dim=8)
    with pytest.raises(ValueError, match="needs image_dimension"):
        MultimodalAlignLoss(tiny_model)


def test_a_frozen_image_encoder_inside_the_loss_equals_precomputed_features(tiny_model, flickr_subset):
    from sbert_nonling.data.captions import caption_image_dataset, read_captions
    from sbert_nonling.data.image_features import extract_image_features
    from sbert_nonling.modules import FrozenImageEncoder

    encoder = FrozenImageEncoder.efficientnet_lite0()
    pairs = read_captions(flickr_subset / "captions.txt", image_dir=flickr_subset / "images")
    rows = caption_image_dataset(pairs, flickr_subset / "images")[:3]
    pixels = torch.stack(rows["label"])
    assert pixels.dtype == torch.uint8 and pixels.shape == (3, 3, 224, 224)
    in_loss = MultimodalAlignLoss(tiny_model, image_dimension=1280, image_encoder=encoder)
    precomputed = extract_image_features([flickr_subset / "images" / image for image, _ in sorted({p[0]: p for p in pairs}.values())[:3]], encoder)
    torch.testing.assert_close(in_loss.check_image_features(pixels, 3), precomputed["global"], atol=1e-4, rtol=1e-4)
    assert not any(key.startswith("_image_encoder") for key in in_loss.state_dict())
    with pytest.raises(ValueError, match=r"label column must hold images \(B, 3, H, W\)"):
        in_loss.check_image_features(torch.randn(3, 1280), 3)


def test_a_sentence_transformers_image_model_can_be_the_frozen_encoder(tiny_encoder_dir, tiny_model):
    from sbert_nonling import ImagePatchEmbed
    from sbert_nonling.models import build_sentence_model

    image_model = build_sentence_model(tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(img_size=32, patch_size=8, embedding_dimension=32)})
    loss = MultimodalAlignLoss(tiny_model, image_dimension=32, image_encoder=image_model)
    features = loss.check_image_features(torch.randint(0, 255, (2, 3, 40, 40), dtype=torch.uint8), 2)
    assert features.shape == (2, 32)
    terms = loss([tiny_model.preprocess(["a cat", "a dog"])] * 2, torch.randint(0, 255, (2, 3, 40, 40), dtype=torch.uint8))
    assert torch.isfinite(terms["grounding"])


def test_damsm_scores_values_and_gradients_match_the_direct_contexts():
    """The scores avoid building the (B_t, B_i, T, D) context vectors; values and gradients equal the direct form."""
    torch.manual_seed(1)
    words, regions = torch.randn(4, 6, 16, requires_grad=True), torch.randn(4, 9, 16, requires_grad=True)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 5 + [0], [1, 0, 0, 0, 0, 0]])
    gammas = (1.0, 5.0, 10.0)
    unit_words, unit_regions = torch.nn.functional.normalize(words, dim=-1), torch.nn.functional.normalize(regions, dim=-1)
    attention = torch.softmax(gammas[0] * torch.einsum("itd,jrd->ijtr", unit_words, unit_regions), dim=-1)
    context = torch.einsum("ijtr,jrd->ijtd", attention, unit_regions)
    relevance = torch.nn.functional.cosine_similarity(context, unit_words[:, None], dim=-1)
    relevance = (gammas[1] * relevance).masked_fill(~mask[:, None, :].bool(), float("-inf"))
    direct = gammas[2] * torch.logsumexp(relevance, dim=-1) / gammas[1]
    expected_grads = torch.autograd.grad(direct.square().sum(), (words, regions))
    scores = damsm_scores(words, mask, regions, gammas)
    torch.testing.assert_close(scores, direct, rtol=1e-5, atol=1e-5)
    for grad, expected in zip(torch.autograd.grad(scores.square().sum(), (words, regions)), expected_grads):
        torch.testing.assert_close(grad, expected, rtol=1e-4, atol=1e-4)


def test_projections_are_the_heads_and_regions_are_averaged_first(tiny_model):
    loss = MultimodalAlignLoss(tiny_model, image_dimension=4, projection_dimension=5)
    sentences, regions = torch.randn(3, tiny_model.get_embedding_dimension()), torch.randn(3, 6, 4)
    torch.testing.assert_close(loss.project_text(sentences), loss.text_head(sentences))
    torch.testing.assert_close(loss.project_images(regions), loss.image_head(regions.mean(dim=1)))
    torch.testing.assert_close(loss.project_images(regions[:, 0]), loss.image_head(regions[:, 0]))
