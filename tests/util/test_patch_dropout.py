from __future__ import annotations

import math

import pytest
import torch

from sbert_nonling.util.patch_dropout import check_token_keep_ratio, drop_patch_tokens, kept_patch_count


def numbered_tokens(rows: int, patches: int, width: int = 3) -> torch.Tensor:
    """(rows, 1 + patches, width) whose every token holds its position index (row-independent)."""
    return torch.arange(1 + patches, dtype=torch.float32).view(1, -1, 1).expand(rows, -1, width).clone()


@pytest.mark.parametrize(("ratio", "kept"), [(0.5, 98), (0.25, 49), (0.75, 147), (0.001, 1)])
def test_every_row_keeps_cls_and_a_sorted_random_subset(ratio, kept):
    torch.manual_seed(0)
    tokens = numbered_tokens(6, 196)
    out = drop_patch_tokens(tokens, ratio)
    assert out.shape == (6, 1 + kept, 3) and kept_patch_count(196, ratio) == kept
    positions = out[..., 0].long()
    assert (positions[:, 0] == 0).all()  # [CLS] first, always
    assert (positions[:, 1:].diff(dim=1) > 0).all()  # distinct patches in grid order
    assert (positions[:, 1:] >= 1).all() and (positions <= 196).all()
    assert (out == out[..., :1]).all()  # whole tokens are moved, not single features
    if kept > 1:
        assert len({tuple(row.tolist()) for row in positions}) == 6  # each row draws its own subset


def test_every_patch_is_kept_equally_often():
    torch.manual_seed(1)
    positions = drop_patch_tokens(numbered_tokens(4000, 16, width=1), 0.25)[:, 1:, 0].long()
    frequency = torch.bincount(positions.flatten(), minlength=17)[1:] / 4000
    assert torch.allclose(frequency, torch.full((16,), 0.25), atol=0.03)


def test_ratio_one_is_the_identity_and_the_draw_follows_the_global_generator():
    tokens = torch.randn(2, 17, 4)
    assert drop_patch_tokens(tokens, 1.0) is tokens
    torch.manual_seed(5)
    first = drop_patch_tokens(tokens, 0.5)
    torch.manual_seed(5)
    torch.testing.assert_close(drop_patch_tokens(tokens, 0.5), first, rtol=0, atol=0)  # a restored RNG replays it
    assert not torch.equal(drop_patch_tokens(tokens, 0.5), first)


def test_gradients_reach_only_the_kept_tokens():
    tokens = torch.randn(3, 9, 4, requires_grad=True)
    torch.manual_seed(0)
    drop_patch_tokens(tokens, 0.5).sum().backward()
    assert (tokens.grad[:, 0] == 1).all() and ((tokens.grad == 1).all(dim=-1).sum(dim=1) == 1 + 4).all()


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.5, math.nan, "0.5", True, None])
def test_bad_ratios_are_named(bad):
    with pytest.raises(ValueError, match=r"token_keep_ratio=.* must be"):
        check_token_keep_ratio(bad)
    assert check_token_keep_ratio(1) == 1.0 and check_token_keep_ratio(0.5) == 0.5
