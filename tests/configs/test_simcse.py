"""SimCSEConfig: the unsupervised row by default, the supervised row as overrides."""

from __future__ import annotations

from sbert_nonling.app.recipes import load_recipe
from sbert_nonling.configs import SimCSEConfig


def test_the_supervised_recipe_differs_from_the_paper_default_in_the_supervised_row_only():
    unsupervised, supervised = SimCSEConfig(), load_recipe("simcse-sup")
    assert SimCSEConfig.method == "simcse" and unsupervised.warmup_steps == 0
    changed = {key: value for key, value in supervised.to_dict().items() if getattr(unsupervised, key, None) != value}
    changed = {key: value for key, value in changed.items() if key not in ("name", "description", "reference")}
    # the paper: NLI triplets, 3 epochs, batch 512, lr 5e-5; [CLS] with the MLP kept at inference.
    assert changed == {
        "data": "nli",
        "pooling": "cls_mlp",
        "text_loss": {"temperature": 0.05, "training_head": "none", "margin": 0.0},
        "batch_size": 512,
        "learning_rate": 5e-5,
        "epochs": 3,
    }
