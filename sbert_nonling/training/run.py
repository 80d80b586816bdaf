"""Run a recipe end to end: build the model, score STS dev, train with SentenceTransformerTrainer, save, export."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers

from sbert_nonling.data.text import nli_triplets_dataset, read_nli_triplets, read_sentences, sentence_pairs_dataset
from sbert_nonling.evaluation.sts import evaluate_sts_dir, sts_dev_evaluator
from sbert_nonling.export.text_model import export_text_model
from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.models.sentence_model import build_sentence_model
from sbert_nonling.models.tiny_encoder import build_tiny_encoder
from sbert_nonling.training.recipes import get_recipe

logger = logging.getLogger(__name__)

#: The model-selection metric: STS-B dev cosine Spearman, as logged by the dev evaluator.
SELECTION_METRIC = "eval_STSBenchmark_spearman_cosine"


def train_recipe(
    recipe: str,
    output_dir: str | Path,
    text_file: str | Path | None = None,
    nli_file: str | Path | None = None,
    sts_dir: str | Path | None = None,
    model: str | None = None,
    tiny: bool = False,
    max_steps: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train ``recipe`` and leave ``output_dir/model`` (full model), ``output_dir/export`` (plain text checkpoint)
    and ``output_dir/checkpoints`` (trainer checkpoints).

    With ``sts_dir`` the dev tasks found there (STS-B dev, SICK trial) are scored before and after training, STS-B dev
    is evaluated every ``eval_steps`` steps and the best checkpoint on it is kept (``load_best_model_at_end``).

    Args:
        recipe: a name from :func:`~sbert_nonling.training.recipes.list_recipes`.
        output_dir: run folder.
        text_file: one sentence per line (recipes with ``"data": "text"``).
        nli_file: SimCSE-format NLI triplets CSV (recipes with ``"data": "nli"``).
        sts_dir: SentEval-layout STS folder for dev evaluation and model selection.
        model: Hub name or folder of the starting encoder; default: the recipe's (bert-base-uncased).
        tiny: start from a small random encoder built offline from the training text (see ``build_tiny_encoder``)
            and use the recipe's ``tiny`` hyper-parameters.
        max_steps: stop after this many optimizer steps (overrides the recipe).
        overrides: other recipe settings to override, e.g. ``{"learning_rate": 1e-5}``.

    Returns:
        ``{"recipe", "model", "export", "dev_before", "dev_after", "best_checkpoint", "global_step"}``.
    """
    settings = get_recipe(recipe, tiny=tiny, overrides=overrides)
    if max_steps is not None:
        settings["max_steps"] = max_steps
    output_dir = Path(output_dir)

    if settings["data"] == "text":
        if text_file is None:
            raise ValueError(f"Recipe {recipe!r} trains on plain sentences: pass text_file (one sentence per line).")
        sentences = read_sentences(text_file)
        train_dataset = sentence_pairs_dataset(sentences)
    elif settings["data"] == "nli":
        if nli_file is None:
            raise ValueError(f"Recipe {recipe!r} trains on NLI triplets: pass nli_file (sent0,sent1,hard_neg CSV).")
        triplets = read_nli_triplets(nli_file)
        sentences = [sentence for triplet in triplets for sentence in triplet]
        train_dataset = nli_triplets_dataset(triplets)
    else:
        raise ValueError(f"Recipe {recipe!r} has an unknown data kind {settings['data']!r}.")

    if tiny and model is not None:
        raise ValueError("Pass either tiny=True (a locally built encoder) or model=..., not both.")
    encoder = str(build_tiny_encoder(output_dir / "tiny-encoder", sentences, seed=settings["seed"])) if tiny else (
        model or settings["model"]
    )
    sentence_model = build_sentence_model(encoder, pooling=settings["pooling"], max_seq_length=settings["max_seq_length"])
    dev_before = evaluate_sts_dir(sentence_model, sts_dir, "dev") if sts_dir else {}

    loss = SimCSELoss(sentence_model, temperature=settings["temperature"], training_head=settings["training_head"])
    evaluating = sts_dir is not None
    args = SentenceTransformerTrainingArguments(
        output_dir=str(output_dir / "checkpoints"),
        num_train_epochs=settings["epochs"],
        max_steps=settings["max_steps"],
        per_device_train_batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"],
        warmup_steps=settings["warmup_steps"],
        lr_scheduler_type=settings["lr_scheduler_type"],
        seed=settings["seed"],
        fp16=bool(settings["fp16"]) and torch.cuda.is_available(),
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        eval_strategy="steps" if evaluating else "no",
        eval_steps=settings["eval_steps"],
        save_strategy="steps",
        save_steps=settings["eval_steps"],
        save_total_limit=2,
        load_best_model_at_end=evaluating,
        metric_for_best_model=SELECTION_METRIC if evaluating else None,
        greater_is_better=True,
        logging_steps=max(1, settings["eval_steps"] // 5),
        report_to="none",
    )
    trainer = SentenceTransformerTrainer(
        model=sentence_model,
        args=args,
        train_dataset=train_dataset,
        loss=loss,
        evaluator=sts_dev_evaluator(sts_dir) if evaluating else None,
    )
    trainer.train()

    dev_after = evaluate_sts_dir(sentence_model, sts_dir, "dev") if sts_dir else {}
    sentence_model.save(str(output_dir / "model"))
    export_text_model(sentence_model, output_dir / "export")
    return {
        "recipe": recipe,
        "model": str(output_dir / "model"),
        "export": str(output_dir / "export"),
        "dev_before": dev_before,
        "dev_after": dev_after,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "global_step": trainer.state.global_step,
    }
