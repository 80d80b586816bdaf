"""DAMSMLoss: the scores against a loop and the direct context vectors, the symmetric cross-entropy, the checks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sbert_nonling.losses.damsm import DAMSMLoss, damsm_scores


def test_damsm_scores_match_a_loop():
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


def test_damsm_scores_values_and_gradients_match_the_direct_contexts():
    """The scores avoid building the (B_t, B_i, T, D) context vectors; values and gradients equal the direct form."""
    torch.manual_seed(1)
    words, regions = torch.randn(4, 6, 16, requires_grad=True), torch.randn(4, 9, 16, requires_grad=True)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 5 + [0], [1, 0, 0, 0, 0, 0]])
    gammas = (1.0, 5.0, 10.0)
    unit_words, unit_regions = (
        torch.nn.functional.normalize(words, dim=-1),
        torch.nn.functional.normalize(regions, dim=-1),
    )
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


def test_loss_is_the_mean_of_both_cross_entropies_of_the_scores_of_the_headed_words_and_regions(tiny_model):
    tiny_model.train()
    loss = DAMSMLoss(tiny_model, image_dimension=6, projection_dimension=8)
    output = tiny_model(tiny_model.preprocess(["a dog runs on grass", "two men cook", "a cat"]))
    regions = torch.randn(3, 4, 6)
    value = loss.compute_loss_from_outputs([output], regions)
    words = loss.word_head(output["token_embeddings"][:, 1:])
    scores = damsm_scores(words, output["attention_mask"][:, 1:], loss.region_head(regions), (1.0, 5.0, 10.0))
    targets = torch.arange(3)
    torch.testing.assert_close(value, (F.cross_entropy(scores, targets) + F.cross_entropy(scores.T, targets)) / 2)
    value.backward()
    assert loss.word_head.weight.grad is not None and loss.region_head.weight.grad is not None
    assert torch.isfinite(
        loss([tiny_model.preprocess(["a", "b"])], torch.randn(2, 4, 6))
    )  # forward: the first column only


def test_settings_and_region_features_are_checked_and_configured(tiny_model):
    with pytest.raises(ValueError, match=r"gammas=\(1.0, 0.0, 10.0\) must be positive"):
        DAMSMLoss(tiny_model, image_dimension=6, gammas=(1.0, 0.0, 10.0))
    loss = DAMSMLoss(tiny_model, image_dimension=6, projection_dimension=8, gammas=[1.0, 5.0, 10.0])
    features = [tiny_model.preprocess(["a", "b"])]
    with pytest.raises(
        ValueError, match=r"DAMSMLoss needs image features \(B, regions, d\) as the label column, got \(2, 6\)"
    ):
        loss(features, torch.randn(2, 6))
    with pytest.raises(ValueError, match="features for 3 images but 2 captions"):
        loss(features, torch.randn(3, 4, 6))
    with pytest.raises(ValueError, match="dimension 5, but DAMSMLoss was built with image_dimension=6"):
        loss(features, torch.randn(2, 4, 5))
    assert loss.get_config_dict() == {"image_dimension": 6, "projection_dimension": 8, "gammas": [1.0, 5.0, 10.0]}
    assert "xu2018attngan" in loss.citation
