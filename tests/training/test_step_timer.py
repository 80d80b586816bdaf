"""StepTimerCallback: forward + backward seconds and batch counts per training dataset, on a plain trainer."""

from __future__ import annotations

import time

import torch
from datasets import DatasetDict
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import MultiDatasetBatchSamplers

from sbert_nonling import SimCSELoss
from sbert_nonling.data import sentence_pairs_dataset
from sbert_nonling.training import StepTimerCallback


class RecordingSimCSELoss(SimCSELoss):
    """SimCSE that records the start and end (``time.perf_counter``) of each of its forward passes."""

    def __init__(self, model) -> None:
        super().__init__(model, training_head="none")
        self.forward_spans: list[tuple[float, float]] = []

    def forward(self, sentence_features, labels=None):
        start = time.perf_counter()
        loss = super().forward(sentence_features, labels)
        self.forward_spans.append((start, time.perf_counter()))
        return loss


def train(model, datasets, losses, tmp_path, max_steps, accumulation=1):
    timer = StepTimerCallback(losses)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=accumulation,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
        save_strategy="no",
        report_to="none",
    )
    SentenceTransformerTrainer(
        model=model, args=args, train_dataset=DatasetDict(datasets), loss=losses, callbacks=[timer]
    ).train()
    return timer


def test_each_batch_is_timed_under_its_dataset_including_accumulated_ones(tiny_model, wiki_sentences, tmp_path):
    torch.manual_seed(0)
    datasets = {
        "first": sentence_pairs_dataset(wiki_sentences[:32]),
        "second": sentence_pairs_dataset(wiki_sentences[32:64]),
    }
    losses = {name: RecordingSimCSELoss(tiny_model) for name in datasets}
    timer = train(tiny_model, datasets, losses, tmp_path, max_steps=3, accumulation=2)  # 6 batches, 2 per step
    assert dict(timer.step_counts) == {"first": 3, "second": 3}
    for name, loss in losses.items():  # each dataset's timed batches contain its loss's forward passes
        assert len(loss.forward_spans) == 3
        assert timer.step_seconds[name] >= sum(end - start for start, end in loss.forward_spans) > 0
    assert all(not loss._forward_pre_hooks for loss in losses.values())  # hooks removed when training ends


def test_one_loss_object_for_two_datasets_is_timed_under_both_names(tiny_model, wiki_sentences, tmp_path):
    shared = SimCSELoss(tiny_model, training_head="none")
    datasets = {"a": sentence_pairs_dataset(wiki_sentences[:16]), "b": sentence_pairs_dataset(wiki_sentences[16:32])}
    timer = train(tiny_model, datasets, {"a": shared, "b": shared}, tmp_path, max_steps=2)
    assert dict(timer.step_counts) == {"a+b": 2} and timer.step_seconds["a+b"] > 0


def test_a_single_loss_is_timed_as_train_or_its_given_dataset_name(tiny_model, wiki_sentences, tmp_path):
    loss = SimCSELoss(tiny_model, training_head="none")
    timer = StepTimerCallback(loss)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, save_strategy="no", report_to="none"
    )
    train_dataset = sentence_pairs_dataset(wiki_sentences[:16])
    named = StepTimerCallback(loss, "text")
    SentenceTransformerTrainer(
        model=tiny_model, args=args, train_dataset=train_dataset, loss=loss, callbacks=[timer, named]
    ).train()
    assert dict(timer.step_counts) == {"train": 2} and dict(named.step_counts) == {"text": 2}
