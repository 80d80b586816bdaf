"""cosine_similarity: sentence-transformers' cos_sim numbers, no Tensor.to_dense(), a gradient through a compiled
graph."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers.util import cos_sim

from sbert_nonling.util.similarity import cosine_similarity


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_it_gives_the_numbers_of_sentence_transformers_cos_sim(dtype):
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 8, generator=generator).to(dtype), torch.randn(3, 8, generator=generator).to(dtype)
    similarities = cosine_similarity(a, b)
    assert similarities.shape == (5, 3) and similarities.dtype == dtype
    assert torch.equal(similarities, cos_sim(a, b))


def test_it_never_calls_to_dense(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("Tensor.to_dense() called")

    a, b = torch.randn(4, 8), torch.randn(4, 8)
    monkeypatch.setattr(torch.Tensor, "to_dense", refuse)
    with pytest.raises(AssertionError, match="to_dense"):
        cos_sim(a, b)  # what the losses no longer call
    cosine_similarity(a, b)


def test_a_compiled_loss_on_it_keeps_its_gradient():
    def contrastive_loss(anchors: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return cosine_similarity(anchors, candidates).logsumexp(dim=1).mean()

    torch._dynamo.reset()
    anchors, candidates = torch.randn(4, 8, requires_grad=True), torch.randn(4, 8, requires_grad=True)
    loss = torch.compile(contrastive_loss, backend="aot_eager")(anchors, candidates)
    assert loss.requires_grad
    loss.backward()
    expected = torch.autograd.grad(contrastive_loss(anchors, candidates), (anchors, candidates))
    torch.testing.assert_close((anchors.grad, candidates.grad), expected)
