"""ContinuousEpochsBatchSampler / ContinuousEpochsTrainer: a step-capped run's epochs in one DataLoader pass, with the
batches and order of separate passes; Pixel Linguist's stages train with it."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

from sbert_nonling.app import load_recipe
from sbert_nonling.data import DataSources
from sbert_nonling.losses import SimCSELoss
from sbert_nonling.methods import build_pixel_linguist
from sbert_nonling.methods.plan import TrainingStage
from sbert_nonling.training import NonLinguisticTrainer
from sbert_nonling.training.continuous_epochs import ContinuousEpochsBatchSampler, ContinuousEpochsTrainer

SENTENCES = [f"Sentence number {number} of the toy corpus." for number in range(20)]


def epoch_batches(sampler: NoDuplicatesBatchSampler, epoch: int) -> list[list[int]]:
    sampler.set_epoch(epoch)
    return list(sampler)


def test_the_pass_holds_the_epochs_of_separate_passes_in_their_order():
    dataset = Dataset.from_dict({"anchor": SENTENCES[:10]})
    epoch_sampler = NoDuplicatesBatchSampler(
        dataset, batch_size=4, drop_last=False, generator=torch.Generator(), seed=5
    )
    sampler = ContinuousEpochsBatchSampler(epoch_sampler, epochs=3)
    sampler.set_epoch(2)  # the trainer sets its epoch before iterating
    separate = [batch for epoch in (2, 3, 4) for batch in epoch_batches(epoch_sampler, epoch)]
    assert list(sampler) == separate and len(sampler) == len(separate) == 9
    assert separate[:3] != separate[3:6]  # each epoch is shuffled anew
    assert (sampler.batch_size, sampler.drop_last) == (4, False)


def test_a_sampler_without_epochs_or_a_pass_without_one_is_refused():
    epoch_sampler = NoDuplicatesBatchSampler(Dataset.from_dict({"anchor": SENTENCES}), batch_size=4, drop_last=True)
    with pytest.raises(ValueError, match="epochs=0 must be at least 1"):
        ContinuousEpochsBatchSampler(epoch_sampler, epochs=0)
    with pytest.raises(ValueError, match=r"The epoch sampler \(list\) has no set_epoch method"):
        ContinuousEpochsBatchSampler([[0, 1], [2, 3]], epochs=2)


def recording(trainer_class: type, batches: list[list[list[int]]]) -> type:
    """``trainer_class`` appending the anchor token ids of every training batch to ``batches``."""

    class Recording(trainer_class):
        def training_step(self, model, inputs, num_items_in_batch=None):
            batches.append(inputs["anchor_input_ids"].tolist())
            return super().training_step(model, inputs, num_items_in_batch)

    return Recording


@pytest.mark.parametrize(
    "max_steps, wrapped_epochs, batch_sampler",
    [(7, 3, "batch_sampler"), (7, 3, "no_duplicates"), (2, None, "no_duplicates")],
)
def test_a_step_capped_run_reads_the_batches_of_separate_epochs_in_one_pass(
    tiny_model, tmp_path, max_steps, wrapped_epochs, batch_sampler
):
    dataset = Dataset.from_dict({"anchor": SENTENCES[:12], "positive": SENTENCES[:12]})
    anchors = {}
    for trainer_class in (NonLinguisticTrainer, ContinuousEpochsTrainer):
        batches: list[list[list[int]]] = []
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / trainer_class.__name__),
            max_steps=max_steps,
            per_device_train_batch_size=4,
            report_to="none",
            save_strategy="no",
            seed=3,
            batch_sampler=batch_sampler,  # sentence-transformers' default (a seedable random sampler) or the package's
        )
        trainer = recording(trainer_class, batches)(
            model=tiny_model, args=args, train_dataset=dataset, loss=SimCSELoss(tiny_model)
        )
        loader = trainer.get_train_dataloader()
        if trainer_class is ContinuousEpochsTrainer and wrapped_epochs:
            assert isinstance(loader.batch_sampler, ContinuousEpochsBatchSampler)
            assert (
                loader.batch_sampler.epochs == wrapped_epochs and len(loader) == 3 * wrapped_epochs
            )  # 3 batches each
        else:
            assert not isinstance(loader.batch_sampler, ContinuousEpochsBatchSampler)  # one epoch: nothing to chain
        trainer.train()
        assert trainer.state.global_step == max_steps
        anchors[trainer_class] = batches
    assert len(anchors[NonLinguisticTrainer]) == max_steps
    assert anchors[ContinuousEpochsTrainer] == anchors[NonLinguisticTrainer]


def test_pixel_linguist_stages_train_with_continuous_epochs(tmp_path, data_dir):
    text_file = tmp_path / "wiki.txt"
    lines = (data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt").read_text(encoding="utf-8").splitlines()
    text_file.write_text("\n".join(lines[:40]) + "\n", encoding="utf-8")
    steps = {"visual.max_steps": 1, "topical.max_steps": 1, "reasoning.max_steps": 0}
    plan = build_pixel_linguist(
        load_recipe("pixel-linguist", tiny=True, overrides=steps), DataSources(text_file=text_file)
    )
    stages = [stage for stage in plan.stages if isinstance(stage, TrainingStage)]
    assert [stage.name for stage in stages] == [
        "visual-0-substitute_visual+swap",
        "visual-1-conditional_shuffle",
        "topical",
    ]
    assert all(stage.trainer_class is ContinuousEpochsTrainer for stage in stages)
