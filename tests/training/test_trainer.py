from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformerTrainingArguments
from transformers import TrainerCallback

from sbert_nonling import SimCSELoss
from sbert_nonling.data import sentence_pairs_dataset
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.trainer import LOSS_STATE_FILE, load_loss_state_dict, loss_state_dict


def make_trainer(model, sentences, output_dir, max_steps):
    torch.manual_seed(0)
    loss = SimCSELoss(model, training_head="mlp")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(output_dir), max_steps=max_steps, per_device_train_batch_size=8, learning_rate=1e-3,
        save_strategy="steps", save_steps=2, report_to="none", seed=3, lr_scheduler_type="constant",
    )
    return NonLinguisticTrainer(model=model, args=args, train_dataset=sentence_pairs_dataset(sentences), loss=loss), loss


def test_checkpoints_hold_the_loss_heads_and_resume_restores_them(tiny_encoder_dir, wiki_sentences, tmp_path):
    from sbert_nonling.models import build_sentence_model

    trainer, loss = make_trainer(build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=2)
    trainer.train()
    saved = load_file(str(tmp_path / "checkpoint-2" / LOSS_STATE_FILE))
    assert set(saved) == {"loss.head.0.weight", "loss.head.0.bias"}  # the head only, never the model
    torch.testing.assert_close(saved["loss.head.0.weight"], loss.head[0].weight.detach())

    resumed, fresh_loss = make_trainer(build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=3)
    assert not torch.equal(fresh_loss.head[0].weight.detach(), saved["loss.head.0.weight"])
    restored = {}

    class HeadProbe(TrainerCallback):  # what the head holds when training resumes, before any new step
        def on_train_begin(self, args, state, control, **kwargs):
            restored["weight"] = fresh_loss.head[0].weight.detach().clone()

    resumed.add_callback(HeadProbe())
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))
    torch.testing.assert_close(restored["weight"], saved["loss.head.0.weight"])


def test_shared_heads_are_stored_once_and_unknown_entries_rejected(tiny_model):
    from sbert_nonling import MultimodalAlignLoss

    simcse = SimCSELoss(tiny_model)
    mcse = MultimodalAlignLoss(tiny_model, image_dimension=8, text_loss=simcse)
    state = loss_state_dict({"text": simcse, "captions": mcse}, tiny_model)
    assert "text.head.0.weight" in state and "captions.text_loss.head.0.weight" not in state
    assert "captions.text_head.0.weight" in state and not any(".model." in key for key in state)
    with pytest.raises(ValueError, match="entries the current losses lack"):
        load_loss_state_dict({"text": simcse}, state)


def test_identical_columns_are_preprocessed_once_and_different_ones_twice(tiny_model, wiki_sentences, tmp_path):
    calls = []
    original = tiny_model.preprocess

    def counting_preprocess(inputs, **kwargs):
        calls.append(list(inputs))
        return original(inputs, **kwargs)

    tiny_model.preprocess = counting_preprocess
    trainer, _ = make_trainer(tiny_model, wiki_sentences[:16], tmp_path, max_steps=1)
    rows = [{"anchor": sentence, "positive": sentence} for sentence in wiki_sentences[:4]]
    calls.clear()  # building the trainer embeds widget examples
    batch = trainer.data_collator(rows)
    assert len(calls) == 1  # (s, s): tokenised once
    for key in ("input_ids", "attention_mask"):
        assert torch.equal(batch[f"anchor_{key}"], batch[f"positive_{key}"])
    expected = original([row["anchor"] for row in rows])
    assert torch.equal(batch["positive_input_ids"], expected["input_ids"])

    calls.clear()
    pairs = [{"anchor": sentence, "positive": other} for sentence, other in zip(wiki_sentences[8:12], wiki_sentences[12:16])]
    batch = trainer.data_collator(pairs)
    assert len(calls) == 2 and not torch.equal(batch["anchor_input_ids"][:, :4], batch["positive_input_ids"][:, :4])


def test_an_audio_clip_in_both_view_columns_is_preprocessed_once(data_dir):
    from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex
    from sbert_nonling.training.trainer import ReuseIdenticalColumns

    dataset, _ = audio_folder_dataset(data_dir / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=3)
    rows = dataset[:3]
    calls = []
    preprocess = ReuseIdenticalColumns(lambda inputs, **kwargs: calls.append(len(inputs)) or {"n": torch.tensor(len(inputs))})
    first, second = preprocess(rows["view_1"], task=None), preprocess(rows["view_2"], task=None)
    assert calls == [3] and first == second and first is not second
    preprocess(rows["view_2"], task="other")  # another task: preprocessed again
    preprocess(dataset[:3]["view_1"], task="other")  # decoded again: new objects, preprocessed again
    assert calls == [3, 3, 3]


def test_no_duplicates_check_of_an_image_dataset_compares_files_without_decoding_them(tiny_model, data_dir, tmp_path):
    from datasets import Dataset
    from sentence_transformers.base.sampler import BatchSamplers

    from sbert_nonling import UnpairedModalityContrastiveLoss
    from sbert_nonling.data.images import TwoViewTransform, two_view_image_dataset

    files = sorted(str(path) for path in (data_dir / "images" / "cifar10" / "train").rglob("*.jpg"))[:5]
    rows = Dataset.from_dict({"image": [files[0], *files], "label": [0, 0, 1, 2, 3, 4]})  # rows 0 and 1: one file
    dataset = two_view_image_dataset(rows, img_size=32)
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=3, report_to="none",
                                                batch_sampler=BatchSamplers.NO_DUPLICATES)
    trainer = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=dataset, loss=UnpairedModalityContrastiveLoss(tiny_model))
    reads = []
    original = TwoViewTransform.__call__
    TwoViewTransform.__call__ = lambda self, batch: reads.append(batch) or original(self, batch)
    try:
        batches = list(trainer.get_batch_sampler(dataset, batch_size=3, drop_last=False, valid_label_columns=["label"], seed=0))
    finally:
        TwoViewTransform.__call__ = original
    assert not reads  # no image decoded or augmented to check for duplicates
    assert sorted(index for batch in batches for index in batch) == list(range(6))
    assert not any({0, 1} <= set(batch) for batch in batches)  # the same file never twice in a batch
