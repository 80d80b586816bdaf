from __future__ import annotations

import pytest
import torch

from sbert_nonling import MultimodalAlignLoss
from sbert_nonling.evaluation.retrieval import evaluate_retrieval, retrieval_recalls


def test_recalls_on_a_hand_checked_toy_case():
    images = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    # captions 0, 1 describe image 0; caption 2 image 1; caption 3 image 2 but points at image 1
    texts = torch.tensor([[1.0, 0.1], [0.9, -0.1], [0.1, 1.0], [0.2, 1.0]])
    scores = retrieval_recalls(texts, images, [0, 0, 1, 2], ks=(1, 2))
    assert scores["text_to_image_R@1"] == pytest.approx(75.0)  # 3 of 4 captions find their image first
    assert scores["text_to_image_R@2"] == pytest.approx(75.0)  # image 2 is third for caption 3
    assert scores["image_to_text_R@1"] == pytest.approx(
        100 * 2 / 3
    )  # image 2's best caption (caption 2) belongs to image 1
    with pytest.raises(ValueError, match="4 captions but 3"):
        retrieval_recalls(texts, images, [0, 0, 1])


def test_evaluate_retrieval_uses_the_loss_heads(tiny_model):
    loss = MultimodalAlignLoss(tiny_model, image_dimension=6)
    captions = ["a dog runs on grass", "a man rides a bike", "two children play"]
    scores = evaluate_retrieval(tiny_model, loss, captions, [0, 1, 2], torch.randn(3, 6))
    assert set(scores) == {"text_to_image_R@1", "image_to_text_R@1", "text_to_image_R@5", "image_to_text_R@5"}
    assert scores["text_to_image_R@5"] == 100.0 and 0.0 <= scores["text_to_image_R@1"] <= 100.0
    assert loss.training  # restored


def test_evaluate_retrieval_draws_no_progress_bar_when_training_logs_at_info(tiny_model, capfd):
    """A training run logs sentence-transformers at INFO for train.log, which turns encode's bar on by default."""
    import logging

    logger = logging.getLogger("sentence_transformers")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        evaluate_retrieval(
            tiny_model,
            MultimodalAlignLoss(tiny_model, image_dimension=6),
            ["a dog runs", "a man rides"],
            [0, 1],
            torch.randn(2, 6),
        )
    finally:
        logger.setLevel(level)
    assert "Batches" not in capfd.readouterr().err
