"""planned_batches reads ahead the batches per dataset that training reads: the same counts the trained run reports."""

from __future__ import annotations

import pytest
from datasets import Dataset, DatasetDict
from sentence_transformers import SentenceTransformerTrainingArguments

from sbert_nonling.losses.simcse import SimCSELoss
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.interleaved_sampler import InterleavedBatchSampler
from sbert_nonling.training.planned_batches import planned_batches


def _trainer(model, tmp_path, sentences, sampler, max_steps):
    pairs = Dataset.from_dict({"anchor": sentences, "positive": sentences})
    data = DatasetDict({"text": pairs, "captions": pairs.select(range(12))})
    args = SentenceTransformerTrainingArguments(
        str(tmp_path / "checkpoints"),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        multi_dataset_batch_sampler=sampler,
        save_strategy="no",
        report_to="none",
    )
    return NonLinguisticTrainer(
        model=model, args=args, train_dataset=data, loss={"text": SimCSELoss(model), "captions": SimCSELoss(model)}
    )


@pytest.mark.parametrize(
    ("sampler", "max_steps"),
    [(InterleavedBatchSampler, 4), (InterleavedBatchSampler, 9), ("round_robin", 5), ("proportional", 7)],
)
def test_the_plan_is_what_training_reads(tmp_path, tiny_model, wiki_sentences, sampler, max_steps):
    trainer = _trainer(tiny_model, tmp_path, wiki_sentences[:40], sampler, max_steps)
    plan = planned_batches(trainer)
    assert plan.optimizer_steps == max_steps and sum(plan.batches.values()) == max_steps
    trainer.train()
    assert {name: count for name, count in plan.batches.items() if count} == trainer.step_counts


def test_a_cap_before_the_first_caption_batch_leaves_the_captions_out(tmp_path, tiny_model, wiki_sentences):
    # 40 text rows and 12 caption rows at batch 4: 10 text and 3 caption batches, a caption batch after every 3 text
    # ones
    plan = planned_batches(_trainer(tiny_model, tmp_path, wiki_sentences[:40], InterleavedBatchSampler, 3))
    assert plan.batches == {"text": 3, "captions": 0} and plan.unused == ["captions"]
    assert plan.first_step == {"text": 1, "captions": 4} and plan.sampler == "InterleavedBatchSampler"


def test_a_single_dataset_run_counts_its_epochs(tmp_path, tiny_model, wiki_sentences):
    args = SentenceTransformerTrainingArguments(
        str(tmp_path), num_train_epochs=2, per_device_train_batch_size=8, report_to="none"
    )
    pairs = Dataset.from_dict({"anchor": wiki_sentences[:20], "positive": wiki_sentences[:20]})
    plan = planned_batches(
        NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=pairs, loss=SimCSELoss(tiny_model))
    )
    assert plan.batches == {"train": 6} and plan.optimizer_steps == 6 and plan.unused == []


def test_epochs_of_several_datasets_are_counted_whole(tmp_path, tiny_model, wiki_sentences):
    trainer = _trainer(tiny_model, tmp_path, wiki_sentences[:40], InterleavedBatchSampler, -1)
    trainer.args.num_train_epochs = 2
    plan = planned_batches(trainer)
    trainer.train()
    assert plan.batches == dict(trainer.step_counts) == {"text": 20, "captions": 6}


def test_a_run_that_drops_the_short_last_batch_counts_full_batches_only(tmp_path, tiny_model, wiki_sentences):
    # what a compiled run does (static shapes): 20 rows at batch 8 are 2 full batches an epoch, the 4 rows left out
    args = SentenceTransformerTrainingArguments(
        str(tmp_path),
        num_train_epochs=2,
        per_device_train_batch_size=8,
        dataloader_drop_last=True,
        save_strategy="no",
        report_to="none",
    )
    pairs = Dataset.from_dict({"anchor": wiki_sentences[:20], "positive": wiki_sentences[:20]})
    trainer = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=pairs, loss=SimCSELoss(tiny_model))
    plan = planned_batches(trainer)
    assert plan.batches == {"train": 4} and plan.optimizer_steps == 4
    trainer.train()
    assert trainer.state.global_step == 4 and trainer.step_counts == {"train": 4}
