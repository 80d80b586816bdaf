"""NonLinguisticTrainer: the callbacks it adds, rotation after the marker (transformers given no save_total_limit), the
identical-column collator, the no-duplicates check of media datasets, no host sync in an ordinary step, and compiled
losses (no graph break, one graph per loss with fixed-length padding, eager's losses, the gradient reaching the
model on every torch)."""

from __future__ import annotations

import contextlib
import time
import traceback
from pathlib import Path

import pytest
import torch
from packaging.version import Version
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.base.evaluation import SequentialEvaluator
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
from torch._dynamo.utils import counters
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import IntervalStrategy, TrainerCallback, set_seed

from sbert_nonling import SimCSELoss
from sbert_nonling.data import sentence_pairs_dataset
from sbert_nonling.methods.plan import TrainingStage
from sbert_nonling.training import NonLinguisticTrainer, NonLinguisticTrainingArguments
from sbert_nonling.training.arguments import SELECTION_METRIC
from sbert_nonling.training.loss_state import LOSS_STATE_FILE
from tests.training.conftest import small_run_arguments


def make_trainer(model, sentences, output_dir, max_steps):
    torch.manual_seed(0)
    loss = SimCSELoss(model, training_head="mlp")
    args = small_run_arguments(output_dir, max_steps)
    return NonLinguisticTrainer(
        model=model, args=args, train_dataset=sentence_pairs_dataset(sentences), loss=loss
    ), loss


def test_checkpoints_hold_the_loss_heads_and_resume_restores_them(tiny_encoder_dir, wiki_sentences, tmp_path):
    from sbert_nonling.models import build_sentence_model

    trainer, loss = make_trainer(build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=2)
    trainer.train()
    saved = load_file(str(tmp_path / "checkpoint-2" / LOSS_STATE_FILE))
    assert set(saved) == {"loss.head.0.weight", "loss.head.0.bias"}  # the head only, never the model
    torch.testing.assert_close(saved["loss.head.0.weight"], loss.head[0].weight.detach())

    resumed, fresh_loss = make_trainer(
        build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=3
    )
    assert not torch.equal(fresh_loss.head[0].weight.detach(), saved["loss.head.0.weight"])
    restored = {}

    class HeadProbe(TrainerCallback):  # what the head holds when training resumes, before any new step
        def on_train_begin(self, args, state, control, **kwargs):
            restored["weight"] = fresh_loss.head[0].weight.detach().clone()

    resumed.add_callback(HeadProbe())
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))
    torch.testing.assert_close(restored["weight"], saved["loss.head.0.weight"])


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
    pairs = [
        {"anchor": sentence, "positive": other} for sentence, other in zip(wiki_sentences[8:12], wiki_sentences[12:16])
    ]
    batch = trainer.data_collator(pairs)
    assert len(calls) == 2 and not torch.equal(batch["anchor_input_ids"][:, :4], batch["positive_input_ids"][:, :4])


def test_no_duplicates_check_of_an_image_dataset_compares_files_without_decoding_them(
    tiny_model, data_dir, tmp_path, monkeypatch
):
    from datasets import Dataset
    from sentence_transformers.base.sampler import BatchSamplers

    from sbert_nonling import UnpairedModalityContrastiveLoss
    from sbert_nonling.data.images import TwoViewTransform, two_view_image_dataset

    files = sorted(str(path) for path in (data_dir / "images" / "cifar10" / "train").rglob("*.jpg"))[:5]
    rows = Dataset.from_dict({"image": [files[0], *files], "label": [0, 0, 1, 2, 3, 4]})  # rows 0 and 1: one file
    dataset = two_view_image_dataset(rows, image_size=32)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=3,
        report_to="none",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
    )
    trainer = NonLinguisticTrainer(
        model=tiny_model, args=args, train_dataset=dataset, loss=UnpairedModalityContrastiveLoss(tiny_model)
    )
    reads = []
    original = TwoViewTransform.__call__

    def recording_call(self, batch):
        reads.append(batch)
        return original(self, batch)

    monkeypatch.setattr(TwoViewTransform, "__call__", recording_call)
    batches = list(
        trainer.get_batch_sampler(dataset, batch_size=3, drop_last=False, valid_label_columns=["label"], seed=0)
    )
    assert not reads  # no image decoded or augmented to check for duplicates
    assert sorted(index for batch in batches for index in batch) == list(range(6))
    assert not any({0, 1} <= set(batch) for batch in batches)  # the same file never twice in a batch


def test_it_is_the_plain_trainer_plus_its_callbacks_and_writes_its_files_into_every_checkpoint(
    tiny_model, wiki_sentences, tmp_path
):
    import json

    from sbert_nonling.training import FiniteTrainingCallback, LossGradientAveragingCallback, PreemptionCallback
    from sbert_nonling.training.checkpoints import COMPLETE_MARKER

    trainer, _ = make_trainer(tiny_model, wiki_sentences[:16], tmp_path, max_steps=2)
    trainer.run_settings = {"learning_rate": 1e-4}
    kinds = [type(callback) for callback in trainer.callback_handler.callbacks]
    ours = [LossGradientAveragingCallback, FiniteTrainingCallback, PreemptionCallback]
    assert [kind for kind in kinds if kind in ours] == ours
    trainer.train()
    assert dict(trainer.step_counts) == {"train": 2} and trainer.step_seconds["train"] > 0
    folder = tmp_path / "checkpoint-2"
    listed = json.loads((folder / COMPLETE_MARKER).read_text())["files"]
    # the trainer's own files are written before the marker, which lists them
    assert {LOSS_STATE_FILE, "step_times.json", "run_settings.json"} <= set(listed)
    assert json.loads((folder / "run_settings.json").read_text()) == {
        "settings": {"learning_rate": 1e-4},
        "changes": [],
    }
    assert json.loads((folder / "step_times.json").read_text())["step_counts"] == {"train": 2}


def test_loading_the_best_checkpoint_at_the_end_keeps_the_runs_heads_and_step_times(
    tiny_encoder_dir, wiki_sentences, tmp_path
):
    from sbert_nonling.models import build_sentence_model

    trainer, loss = make_trainer(build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=4)
    at_step_2 = {}

    class WeightsAtSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 2:
                at_step_2.update({key: value.clone() for key, value in kwargs["model"].state_dict().items()})

    trainer.add_callback(WeightsAtSave())
    trainer.train()
    head = loss.head[0].weight.detach().clone()
    # what transformers does at the end of a run with load_best_model_at_end, for a best checkpoint before the last
    trainer.state.best_model_checkpoint = str(tmp_path / "checkpoint-2")
    trainer._load_best_model()
    for key, value in trainer.model.state_dict().items():  # the best checkpoint's weights were loaded
        torch.testing.assert_close(value, at_step_2[key], rtol=0, atol=0)
    assert torch.equal(loss.head[0].weight.detach(), head)  # the heads are the run's, not checkpoint-2's
    assert dict(trainer.step_counts) == {"train": 4}  # the whole run, not the best checkpoint's 2 steps


def test_its_record_names_the_best_checkpoint_the_dev_curve_and_the_scores_the_model_ends_with(
    tiny_model, wiki_sentences, tmp_path
):
    pairs = (wiki_sentences[:12], wiki_sentences[12:24], [index / 11 for index in range(12)])
    evaluator = SequentialEvaluator(
        [
            EmbeddingSimilarityEvaluator(*pairs, name="STSBenchmark"),
            EmbeddingSimilarityEvaluator(*pairs, name="SICK-R"),
        ]
    )
    args = small_run_arguments(
        tmp_path,
        4,
        eval_strategy="steps",
        eval_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model=SELECTION_METRIC,
    )
    loss = SimCSELoss(tiny_model)
    data = sentence_pairs_dataset(wiki_sentences[:64])
    trainer = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=data, loss=loss, evaluator=evaluator)
    trainer.train()
    record = trainer.training_record()
    logged = [entry for entry in trainer.state.log_history if SELECTION_METRIC in entry]
    assert [entry["step"] for entry in logged] == [2, 4]
    assert record["dev_curve"] == [[entry["step"], 100.0 * entry[SELECTION_METRIC]] for entry in logged]
    best = max(logged, key=lambda entry: entry[SELECTION_METRIC])
    assert record["best_checkpoint"] == str(tmp_path / f"checkpoint-{best['step']}")
    assert (record["global_step"], record["step_counts"], record["compile"], record["padding"]) == (
        4,
        {"train": 4},
        None,
        "longest",
    )
    assert trainer.best_dev_scores() == {
        "STSBenchmark": 100.0 * best["eval_STSBenchmark_spearman_cosine"],
        "SICK-R": 100.0 * best["eval_SICK-R_spearman_cosine"],
    }


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


def test_each_batch_is_timed_under_its_dataset_including_accumulated_ones(tiny_model, wiki_sentences, tmp_path):
    from datasets import DatasetDict
    from sentence_transformers.base.sampler import MultiDatasetBatchSamplers

    torch.manual_seed(0)
    datasets = {
        "first": sentence_pairs_dataset(wiki_sentences[:32]),
        "second": sentence_pairs_dataset(wiki_sentences[32:64]),
    }
    losses = {name: RecordingSimCSELoss(tiny_model) for name in datasets}
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,  # 6 batches, 2 per step
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
        save_strategy="no",
        report_to="none",
    )
    trainer = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=DatasetDict(datasets), loss=losses)
    trainer.train()
    assert dict(trainer.step_counts) == {"first": 3, "second": 3}
    for name, loss in losses.items():  # each dataset's timed batches contain its loss's forward passes
        assert len(loss.forward_spans) == 3
        assert trainer.step_seconds[name] >= sum(end - start for start, end in loss.forward_spans) > 0


def test_one_loss_object_for_two_datasets_is_timed_under_each_name(tiny_model, wiki_sentences, tmp_path):
    from datasets import DatasetDict
    from sentence_transformers.base.sampler import MultiDatasetBatchSamplers

    shared = SimCSELoss(tiny_model, training_head="none")
    datasets = {"a": sentence_pairs_dataset(wiki_sentences[:16]), "b": sentence_pairs_dataset(wiki_sentences[16:32])}
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
        save_strategy="no",
        report_to="none",
    )
    trainer = NonLinguisticTrainer(
        model=tiny_model, args=args, train_dataset=DatasetDict(datasets), loss={"a": shared, "b": shared}
    )
    trainer.train()
    assert dict(trainer.step_counts) == {"a": 1, "b": 1} and trainer.step_seconds["b"] > 0


def test_a_dataset_read_as_tensors_keeps_its_format_when_the_dataset_name_is_added(
    tiny_model, wiki_sentences, tmp_path
):
    """sentence-transformers names the datasets of a dict with a transform, which serves a caption dataset's features
    as Python lists; this trainer stores the name instead: the rows keep their tensors, the batches are the plain
    trainer's, the user's datasets are left as they were, and a second trainer reads the same dict."""
    from datasets import DatasetDict
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.base.sampler import MultiDatasetBatchSamplers

    from sbert_nonling import MultimodalAlignLoss
    from sbert_nonling.data.captions import caption_feature_dataset

    names = [f"{index}.jpg" for index in range(12)]
    captions = caption_feature_dataset(
        list(zip(names, wiki_sentences[:12])), names, torch.randn(12, 48, generator=torch.Generator().manual_seed(0))
    )
    text = sentence_pairs_dataset(wiki_sentences[12:24])
    loss = {"text": SimCSELoss(tiny_model), "captions": MultimodalAlignLoss(tiny_model, image_dimension=48)}
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
        report_to="none",
        seed=5,
    )

    def trainer(trainer_class):
        datasets = DatasetDict({"text": text, "captions": captions})
        return trainer_class(model=tiny_model, args=args, train_dataset=datasets, loss=loss)

    ours = trainer(NonLinguisticTrainer)
    row = ours.train_dataset["captions"][0]
    assert isinstance(row["label"], torch.Tensor) and row["dataset_name"] == "captions"
    assert captions.format["type"] == "torch" and "dataset_name" not in captions.column_names
    plain = trainer(SentenceTransformerTrainer)  # (sets its transform on the user's dataset)
    assert isinstance(plain.train_dataset["captions"][0]["label"], list)  # what the stored name avoids
    batches = [list(trainer.get_train_dataloader()) for trainer in (ours, plain)]
    assert [batch["dataset_name"] for batch in batches[0]] == ["text", "captions"] * 3
    for batch, expected in zip(*batches):
        assert batch.keys() == expected.keys()
        if "label" in batch:
            assert batch["label"].dtype == torch.float32
            torch.testing.assert_close(batch["label"], expected["label"], rtol=0, atol=0)
    again = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=ours.train_dataset, loss=loss)
    assert again.train_dataset["captions"][0]["dataset_name"] == "captions"
    again.args.max_steps = 2
    again.train()
    assert dict(again.step_counts) == {"text": 1, "captions": 1}


def test_a_single_dataset_is_timed_under_its_given_name(tiny_model, wiki_sentences, tmp_path):
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, save_strategy="no", report_to="none"
    )
    loss = SimCSELoss(tiny_model, training_head="none")
    train_dataset = sentence_pairs_dataset(wiki_sentences[:16])
    trainer = NonLinguisticTrainer(
        model=tiny_model, args=args, train_dataset=train_dataset, loss=loss, train_dataset_name="text"
    )
    trainer.train()
    assert dict(trainer.step_counts) == {"text": 2}


class FoldersAtSave(TrainerCallback):
    """Records the checkpoint folders on disk at each on_save (of a plain trainer: before the marker callback runs)."""

    def __init__(self) -> None:
        self.seen = []

    def on_save(self, args, state, control, **kwargs):
        self.seen.append(sorted(path.name for path in tmp_folders(args.output_dir)))


def tmp_folders(output_dir):
    return [path for path in Path(output_dir).iterdir() if path.name.startswith("checkpoint-")]


def test_older_checkpoints_are_rotated_only_after_the_new_one_is_marked(
    tiny_encoder_dir, wiki_sentences, tmp_path, monkeypatch
):
    from sentence_transformers import SentenceTransformerTrainer

    from sbert_nonling.models import build_sentence_model
    from sbert_nonling.training import CheckpointMarkerCallback
    from sbert_nonling.training import trainer as trainer_module

    seen = {}
    at_marker = []  # the checkpoint folders on disk as NonLinguisticTrainer marks each new one
    write_complete_marker = trainer_module.write_complete_marker

    def recording_marker(folder, step):
        at_marker.append(sorted(path.name for path in tmp_folders(Path(folder).parent)))
        write_complete_marker(folder, step)

    monkeypatch.setattr(trainer_module, "write_complete_marker", recording_marker)
    for trainer_class in (NonLinguisticTrainer, SentenceTransformerTrainer):
        model = build_sentence_model(tiny_encoder_dir)
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / trainer_class.__name__),
            max_steps=4,
            per_device_train_batch_size=8,
            save_strategy="steps",
            save_steps=2,
            save_total_limit=1,
            report_to="none",
        )
        probe = FoldersAtSave()
        trainer = trainer_class(
            model=model,
            args=args,
            train_dataset=sentence_pairs_dataset(wiki_sentences[:32]),
            loss=SimCSELoss(model),
            callbacks=[probe, CheckpointMarkerCallback()] if trainer_class is SentenceTransformerTrainer else [probe],
        )
        trainer.train()
        seen[trainer_class] = probe.seen
        assert args.save_total_limit == 1  # the caller's arguments are left as they are
        assert [path.name for path in tmp_folders(args.output_dir)] == [
            "checkpoint-4"
        ]  # rotated in the end, either way
        if trainer_class is NonLinguisticTrainer:
            assert trainer.args.save_total_limit is None  # transformers rotates nothing; the trainer does
    assert at_marker == [["checkpoint-2"], ["checkpoint-2", "checkpoint-4"]]  # 2 kept until 4 is marked
    assert seen[NonLinguisticTrainer] == [["checkpoint-2"], ["checkpoint-4"]]  # then rotated, before on_save
    assert seen[SentenceTransformerTrainer] == [
        ["checkpoint-2"],
        ["checkpoint-4"],
    ]  # transformers rotated before the marker


def _worker_datasets(kind, tiny_encoder_dir, data_dir, wiki_sentences, flickr_subset):
    """(model, training dataset, loss) of each dataset kind the package builds whose reading does work per batch."""
    from datasets import DatasetDict

    from sbert_nonling import AudioPatchEmbed, MultimodalAlignLoss, SymmetricInfoNCE, UnpairedModalityContrastiveLoss
    from sbert_nonling.data import audio_folder_dataset, caption_feature_dataset, label_from_regex
    from sbert_nonling.data.captions import read_captions
    from sbert_nonling.data.image_features import load_image_features
    from sbert_nonling.data.perturbations import perturbation_pairs_dataset
    from sbert_nonling.models import build_sentence_model
    from sbert_nonling.models.pixel_model import build_pixel_model
    from sbert_nonling.modules.pixel_encoder import PixelEncoder

    if kind == "audio clips":
        model = build_sentence_model(
            tiny_encoder_dir, front_ends={"audio": AudioPatchEmbed(embedding_dimension=32, target_frames=64)}
        )
        dataset, _ = audio_folder_dataset(data_dir / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=8)
        return model, dataset, UnpairedModalityContrastiveLoss(model)
    pairs = perturbation_pairs_dataset(wiki_sentences[:16], ["insert", "shuffle"], rate=0.5)
    if kind.startswith("captions + features"):
        model = build_sentence_model(tiny_encoder_dir)
        names, features = load_image_features(flickr_subset / "features.safetensors")
        dataset = caption_feature_dataset(read_captions(flickr_subset / "captions.txt"), names, features["global"])
        loss = MultimodalAlignLoss(model, image_dimension=features["global"].shape[1])
        if kind == "captions + features":
            return model, dataset, loss
        # beside text, one loss per dataset (MCSE): the captions keep their tensors with the name stored
        return model, DatasetDict({"text": pairs, "captions": dataset}), {"text": SimCSELoss(model), "captions": loss}
    if kind == "perturbation pairs":
        model = build_sentence_model(tiny_encoder_dir)
        return model, pairs, SimCSELoss(model)
    encoder = PixelEncoder.from_config(
        max_patches=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
    )
    model = build_pixel_model(encoder, max_patches=16)  # "pixel renders": the collator renders in the workers
    return model, pairs, SymmetricInfoNCE(model)


@pytest.mark.parametrize(
    "kind",
    ["audio clips", "captions + features", "captions + features in a dict", "perturbation pairs", "pixel renders"],
)
def test_every_dataset_kind_reads_the_same_batches_in_dataloader_workers(
    kind, tiny_encoder_dir, data_dir, wiki_sentences, flickr_subset, tmp_path
):
    """2 persistent DataLoader workers (decoding, fbank, features, perturbations and renders in the worker processes)
    give the batches of the main process (the two-view images, seeded by the pass: tests/resume, tests/data)."""
    model, dataset, loss = _worker_datasets(kind, tiny_encoder_dir, data_dir, wiki_sentences, flickr_subset)

    def batches(workers: int) -> list[dict]:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / str(workers)),
            per_device_train_batch_size=4,
            report_to="none",
            seed=3,
            dataloader_num_workers=workers,
            dataloader_persistent_workers=workers > 0,
            dataloader_pin_memory=False,
        )
        loader = NonLinguisticTrainer(model=model, args=args, train_dataset=dataset, loss=loss).get_train_dataloader()
        return [batch for _ in range(2) for batch, _ in zip(loader, range(2))]  # two passes: persistent workers reused

    in_process, in_workers = batches(0), batches(2)
    assert len(in_workers) == 4
    if kind == "captions + features in a dict":
        names = [batch["dataset_name"] for batch in in_workers]
        assert "captions" in names and "text" in names, names
    for expected, batch in zip(in_process, in_workers):
        assert expected.keys() == batch.keys()
        for key, value in expected.items():
            if isinstance(value, torch.Tensor):
                torch.testing.assert_close(batch[key], value, rtol=0, atol=0, msg=key)
            else:
                assert batch[key] == value, key


def test_resuming_a_run_whose_training_is_complete_takes_no_step(tiny_encoder_dir, wiki_sentences, tmp_path):
    from sbert_nonling.models import build_sentence_model

    trainer, loss = make_trainer(build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=4)
    trainer.train()
    final = {key: value.clone() for key, value in trainer.model.state_dict().items()}
    head = loss.head[0].weight.detach().clone()
    resumed, resumed_loss = make_trainer(
        build_sentence_model(tiny_encoder_dir), wiki_sentences[:64], tmp_path, max_steps=4
    )
    output = resumed.train(resume_from_checkpoint=True)  # transformers alone would take a step 5
    assert output.global_step == 4 and resumed.state.global_step == 4
    assert not (tmp_path / "checkpoint-5").exists()
    for key, value in resumed.model.state_dict().items():
        torch.testing.assert_close(value, final[key], rtol=0, atol=0, msg=key)
    torch.testing.assert_close(resumed_loss.head[0].weight.detach(), head, rtol=0, atol=0)


#: Innermost Python files of ``aten._local_scalar_dense`` calls that are not the package's: torchaudio's SpecAugment
#: masks (``torch.rand(1)`` read back on the host: CPU tensors even when training on a GPU, so no device
#: synchronisation there).
OTHERS_SYNCS = ("torchaudio/functional/functional.py",)


class HostSyncs(TorchDispatchMode):
    """Records the Python call site of every host-device synchronisation (``aten._local_scalar_dense``: ``.item()``,
    ``bool(tensor)``, ``.tolist()``, ...) dispatched while it is active, innermost frame first."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: list[list[str]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            frames = [frame for frame in traceback.extract_stack()[:-1] if "/torch/" not in frame.filename]
            self.sites.append([f"{frame.filename}:{frame.lineno}" for frame in reversed(frames[-4:])])
        return func(*args, **(kwargs or {}))


class StepSyncs(TrainerCallback):
    """The host syncs of every optimizer step whose end neither logs, evaluates nor saves, by step (but those whose
    innermost file ends with one of ``others``: default :data:`OTHERS_SYNCS`)."""

    def __init__(self, others: tuple[str, ...] = OTHERS_SYNCS) -> None:
        self.others = others
        self.ordinary: dict[int, list[list[str]]] = {}

    def on_step_begin(self, args, state, control, **kwargs):
        self.mode = HostSyncs()
        self.mode.__enter__()

    def on_step_end(self, args, state, control, **kwargs):
        self.mode.__exit__(None, None, None)
        if (
            control.should_log
            or control.should_evaluate
            or control.should_save
            or state.global_step >= state.max_steps
        ):
            return
        self.ordinary[state.global_step] = [
            site for site in self.mode.sites if not site[0].split(":")[0].endswith(self.others)
        ]


@pytest.fixture(scope="module")
def family_inputs(tmp_path_factory, data_dir):
    """Small copies of the shared data: 128 wiki sentences, 100 NLI triplets, STS / SICK task files."""
    root = tmp_path_factory.mktemp("family-inputs")

    def head(source, target, pick):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(pick(source.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
        return target

    wiki = head(data_dir / "corpus" / "wiki1m_for_simcse.first11913.txt", root / "wiki.txt", lambda lines: lines[:128])
    nli = head(data_dir / "corpus" / "snli_devtest_triplets.csv", root / "nli.csv", lambda lines: lines[:100])
    for folder, name, pick in (
        ("STSBenchmark", "sts-dev.csv", lambda lines: lines[:60]),
        ("SICK", "SICK_trial.txt", lambda lines: lines[:60]),
        ("STSBenchmark", "sts-train.csv", lambda lines: lines[::40]),
        ("SICK", "SICK_train.txt", lambda lines: lines[::30]),
    ):
        head(data_dir / "sts" / folder / name, root / "tasks" / folder / name, pick)
    return {"wiki": wiki, "nli": nli, "tasks": root / "tasks"}


#: Every method family, by a recipe of it.
FAMILIES = ["simcse", "visualcse", "audiocse", "mcse", "macd", "kdmcse", "dalr", "multitask", "pixel-linguist"]


def family_plan(family, inputs, data_dir, flickr_subset, steps):
    """The tiny-recipe plan of ``family`` (its builder, as ``train_recipe`` runs it) for ``steps`` steps per stage."""
    from sbert_nonling.app import load_recipe
    from sbert_nonling.data import DataSources
    from sbert_nonling.methods import (
        BUILDERS,
        build_grounding,
        build_multitask,
        build_pixel_linguist,
        build_simcse,
        build_unpaired_modality,
    )

    if family == "simcse":
        return build_simcse(
            load_recipe("simcse-unsup", tiny=True, overrides={"batch_size": 8, "max_steps": steps}),
            DataSources(text_file=inputs["wiki"]),
        )
    if family == "visualcse":
        config = load_recipe(
            "visualcse",
            tiny=True,
            overrides={"batch_size": 8, "max_steps": steps, "images_per_class": 2, "modality_batch_size": 4},
        )
        return build_unpaired_modality(
            config, DataSources(text_file=inputs["wiki"], image_dir=data_dir / "images" / "cifar10" / "train")
        )
    if family == "audiocse":
        config = load_recipe(
            "audiocse",
            tiny=True,
            overrides={"batch_size": 8, "max_steps": steps, "clips": 16, "modality_batch_size": 4},
        )
        audio = DataSources(
            text_file=inputs["wiki"], audio_dir=data_dir / "audio" / "fsdd", audio_label_regex=r"^\d+_([a-z]+)_"
        )
        return build_unpaired_modality(config, audio)
    if family in ("mcse", "macd"):
        config = load_recipe(family, tiny=True, overrides={"batch_size": 6, "max_steps": steps})
        captions = DataSources(
            captions_file=flickr_subset / "captions.txt",
            image_dir=flickr_subset / "images",
            image_features=flickr_subset / "features.safetensors",
            text_file=inputs["wiki"],
        )
        return build_grounding(config, captions)
    if family in ("kdmcse", "dalr"):  # the tiny CLIP teacher's features computed by the builder
        config = load_recipe(family, tiny=True, overrides={"batch_size": 6, "max_steps": steps})
        captions = DataSources(
            captions_file=flickr_subset / "captions.txt", image_dir=flickr_subset / "images", text_file=inputs["wiki"]
        )
        return BUILDERS[family](config, captions)
    if family == "pixel-linguist":
        overrides = {
            "perturbation_sets": [["swap"]],
            "visual.batch_size": 8,
            "visual.max_steps": steps,
            "topical.max_steps": 0,
        }
        config = load_recipe(
            "pixel-linguist", tiny=True, overrides={**overrides, "reasoning.max_steps": 0, "parallel.max_steps": 0}
        )
        return build_pixel_linguist(config, DataSources(text_file=inputs["wiki"], nli_file=inputs["nli"]))
    overrides = {
        "train_limit": 48,
        "contrastive.batch_size": 8,
        "multitask.batch_size": 8,
        "contrastive.max_steps": steps,
        "multitask.max_steps": steps,
    }
    return build_multitask(
        load_recipe("multitask", tiny=True, overrides=overrides),
        DataSources(nli_file=inputs["nli"], sts_dir=inputs["tasks"]),
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_an_ordinary_training_step_never_waits_for_the_device(
    family, family_inputs, data_dir, flickr_subset, tmp_path, monkeypatch
):
    """No host read-back in a step that neither logs, evaluates nor saves, transformers' mask check included: the
    device check is faked to a GPU's (the encoder then gets a prepared mask; on the CPU the check waits for
    nothing and the 2-D mask keeps the committed numbers)."""
    from sbert_nonling.modules import encoder_families

    monkeypatch.setattr(encoder_families, "mask_check_syncs", lambda device: True)
    monkeypatch.chdir(tmp_path)
    plan = family_plan(family, family_inputs, data_dir, flickr_subset, steps=5)
    stages = [
        stage for stage in plan.stages if isinstance(stage, TrainingStage) and stage.args.max_steps != 0
    ]  # not weight averages
    for index, stage in enumerate(stages):
        stage.args.eval_strategy, stage.args.load_best_model_at_end = (
            IntervalStrategy.NO,
            False,
        )  # multitask evaluates on STS dev
        trainer = stage.trainer(plan.model)
        trainer.args.output_dir = str(tmp_path / f"stage-{index}")
        trainer.args.set_logging(strategy="steps", steps=3, report_to="none")
        trainer.args.set_save(strategy="no")
        syncs = StepSyncs()
        trainer.add_callback(syncs)
        trainer.train()
        assert sorted(syncs.ordinary) == [1, 2, 4], stage.name  # step 3 logs, step 5 is the last
        assert syncs.ordinary == {1: [], 2: [], 4: []}, stage.name


class NanAtSecondCall(SimCSELoss):
    """SimCSELoss whose second call (the second step) gives a NaN loss."""

    calls = 0

    def forward(self, features, labels=None):
        self.calls += 1
        loss = super().forward(features, labels)
        return loss * float("nan") if self.calls == 2 else loss


def test_a_nan_loss_stops_the_run_before_a_save_decided_after_the_step_end(tiny_model, wiki_sentences, tmp_path):
    from sbert_nonling.training import TrainingDiverged

    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        num_train_epochs=2,
        per_device_train_batch_size=8,
        save_strategy="epoch",
        logging_strategy="no",
        report_to="none",
    )
    dataset = sentence_pairs_dataset(wiki_sentences[:16])  # 2 steps per epoch
    trainer = NonLinguisticTrainer(
        model=tiny_model, args=args, train_dataset=dataset, loss=NanAtSecondCall(tiny_model)
    )
    with pytest.raises(TrainingDiverged, match=r"step 2: the loss is nan"):
        trainer.train()  # step 2 ends the first epoch: its save is asked for at the epoch's end, after the checks
    assert not list(tmp_path.glob("checkpoint-*"))


class ModelGradients(TrainerCallback):
    """Before each optimizer step, the names of the model's parameters its gradient reached (a nonzero gradient)."""

    def __init__(self, model) -> None:
        self.model = model
        self.reached: list[set[str]] = []

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        parameters = self.model.named_parameters()
        self.reached.append(
            {name for name, parameter in parameters if parameter.grad is not None and parameter.grad.any()}
        )


def compiled_run(stages, model, output_dir, **compile_options):
    """Train ``stages`` (tiny plans' training stages) with their losses compiled by ``aot_eager`` (dynamo's tracing
    and AOTAutograd, no code generated) unless ``compile_options`` say otherwise, logging every step; per stage, the
    graph breaks, the graphs built, the losses that ran, the logged training losses and, per step, the model's
    parameters its gradient reached (:class:`ModelGradients`)."""
    results = []
    for index, stage in enumerate(stages):
        stage.args.eval_strategy, stage.args.load_best_model_at_end = IntervalStrategy.NO, False
        stage.args.output_dir = str(output_dir / f"stage-{index}")
        stage.args.set_save(strategy="no")
        stage.args.logging_steps = 1
        for key, value in {"compile_loss": True, "compile_backend": "aot_eager", **compile_options}.items():
            setattr(stage.args, key, value)
        torch._dynamo.reset()
        counters.clear()
        trainer = stage.trainer(model)
        gradients = ModelGradients(model)
        trainer.add_callback(gradients)
        trainer.train()
        ran = {
            id(trainer.loss[name] if isinstance(trainer.loss, dict) else trainer.loss) for name in trainer.step_counts
        }
        logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        graph_breaks, graphs = dict(counters["graph_break"]), counters["stats"]["unique_graphs"]
        results.append((graph_breaks, graphs, len(ran), logged, gradients.reached))
    return results


#: Whether torch's compiler traces sentence-transformers' column merging (``ContextVar.get``, under ``embed_columns`` /
#: ``forward_views``): from 2.14; before, each call splits the graph, and the numbers are the same (docs/benchmarks.md,
#: "Compiled steps on torch 2.11 (CPU)": this test run in a side environment with torch 2.11).
TRACES_CONTEXT_VARS = Version(torch.__version__).release >= (2, 14)


def assert_only_known_graph_breaks(graph_breaks: dict[str, int]) -> None:
    """No graph break where torch traces sentence-transformers' column merging; before, only its ``ContextVar.get``."""
    if TRACES_CONTEXT_VARS:
        assert graph_breaks == {}
    else:
        assert all("ContextVar" in reason for reason in graph_breaks), graph_breaks


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_compiled_without_a_graph_break_one_graph_per_loss_and_eager_s_losses_and_gradients(
    family, family_inputs, data_dir, flickr_subset, tmp_path, monkeypatch
):
    """On every torch the package declares, a compiled step's losses are eager's and its gradient reaches the model
    (on torch 2.14 and later without a graph break, one graph per loss): the parameters every eager step's gradient
    reaches (torch 2.11 / 2.12 dropped the gradient of ``Tensor.to_dense()`` in a compiled graph,
    which sentence-transformers' ``cos_sim`` ends in; the losses score with ``cosine_similarity`` instead)."""
    monkeypatch.chdir(tmp_path)
    runs = {}
    for compiled in (False, True):
        set_seed(3)  # the loss heads are drawn from the global generator
        plan = family_plan(family, family_inputs, data_dir, flickr_subset, steps=6)
        for module in plan.model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0  # the same numbers: compiled dropout may draw its masks differently
        stages = [stage for stage in plan.stages if isinstance(stage, TrainingStage) and stage.args.max_steps != 0]
        options = {"compile_loss": compiled, "pad_to_max_length": True}
        runs[compiled] = compiled_run(stages, plan.model, tmp_path / str(compiled), **options)
    for (graph_breaks, graphs, losses, logged, reached), (*_, eager, eager_reached) in zip(runs[True], runs[False]):
        assert_only_known_graph_breaks(graph_breaks)
        if TRACES_CONTEXT_VARS:
            assert graphs == losses  # each loss traced once: every batch has the same shapes
        assert len(logged) == 6 and logged == pytest.approx(eager, rel=1e-5)
        assert all(reached) and reached == eager_reached


def test_fixed_length_padding_keeps_one_compiled_graph_where_the_longest_sentence_rebuilds_it(
    family_inputs, data_dir, tmp_path, monkeypatch
):
    """Padded to ``max_seq_length`` every batch has one shape and the compiled loss is traced once (before torch 2.14,
    once per piece that sentence-transformers' ``ContextVar.get`` splits it into); padded to the longest sentence,
    the second batch's length traces it again."""
    monkeypatch.chdir(tmp_path)
    graphs = {}
    for padding in (False, True):
        plan = family_plan("simcse", family_inputs, data_dir, None, steps=4)
        [(graph_breaks, graphs[padding], _, _, reached)] = compiled_run(
            plan.stages, plan.model, tmp_path / str(padding), pad_to_max_length=padding
        )
        assert_only_known_graph_breaks(graph_breaks)
        assert len(reached) == 4 and all(reached)  # every compiled step's gradient reaches the model
    if TRACES_CONTEXT_VARS:
        assert graphs == {False: 2, True: 1}  # the second batch's length recompiles (dynamic) unless padded
    else:  # ContextVar.get splits the loss into pieces (torch 2.11: 3); a new length traces those that see it again
        assert graphs[True] < graphs[False]


def test_fixed_length_padding_pads_text_to_max_seq_length_and_keeps_the_embeddings(tiny_model, tmp_path):
    sentences = ["A man is playing a guitar.", "Dogs run.", "It rains over the whole valley today."]
    args = NonLinguisticTrainingArguments(str(tmp_path), pad_to_max_length=True, report_to="none")
    trainer = NonLinguisticTrainer(
        model=tiny_model, args=args, train_dataset=sentence_pairs_dataset(sentences), loss=SimCSELoss(tiny_model)
    )
    batch = trainer.data_collator([{"anchor": sentence, "positive": sentence} for sentence in sentences])
    assert batch["anchor_input_ids"].shape == (3, tiny_model.max_seq_length)
    tiny_model.eval()
    padded = tiny_model({"input_ids": batch["anchor_input_ids"], "attention_mask": batch["anchor_attention_mask"]})
    torch.testing.assert_close(
        padded["sentence_embedding"], tiny_model.encode(sentences, convert_to_tensor=True), rtol=1e-5, atol=1e-5
    )


@pytest.mark.slow
def test_a_loss_compiled_by_inductor_trains_as_the_eager_one(family_inputs, data_dir, tmp_path, monkeypatch, request):
    import torch._inductor.config

    monkeypatch.chdir(tmp_path)
    # the config module's own patch: monkeypatch's undo removes the setting, and later compiles then fail on it
    stack = contextlib.ExitStack()
    stack.enter_context(torch._inductor.config.patch(fallback_random=True))
    request.addfinalizer(stack.close)
    losses = {}
    for compiled in (False, True):
        set_seed(3)  # the loss head is drawn from the global generator
        plan = family_plan("simcse", family_inputs, data_dir, None, steps=3)
        [stage] = plan.stages
        for module in plan.model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0  # the same numbers: compiled dropout draws its masks differently
        stage.args.eval_strategy, stage.args.load_best_model_at_end = IntervalStrategy.NO, False
        stage.args.output_dir, stage.args.logging_steps = str(tmp_path / str(compiled)), 1
        stage.args.set_save(strategy="no")
        stage.args.compile_loss = stage.args.pad_to_max_length = compiled
        torch._dynamo.reset()
        counters.clear()
        trainer = stage.trainer(plan.model)
        trainer.train()
        assert counters["stats"]["unique_graphs"] == compiled  # one inductor graph, or none
        losses[compiled] = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses[True]) == 3
    assert losses[True] == pytest.approx(losses[False], rel=1e-4)


class TermsLoss(torch.nn.Module):
    """A loss reporting two terms (as DALR's and KDMCSE's caption losses do), each a share of SimCSE's loss."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model
        self.simcse = SimCSELoss(model)

    def forward(self, sentence_features, labels):
        loss = self.simcse(sentence_features, labels)
        return {"first": 0.25 * loss, "second": 0.75 * loss}


def test_a_window_without_a_batch_of_a_loss_s_terms_logs_no_term_rather_than_nan(tiny_model, wiki_sentences, tmp_path):
    """Text batches (a plain loss) and caption batches (terms), one logged step each: the text steps' windows held no
    term, which sentence-transformers alone logs as 0 / 0 = NaN."""
    from sentence_transformers.base.sampler import MultiDatasetBatchSamplers

    datasets = {
        "text": sentence_pairs_dataset(wiki_sentences[:32]),
        "captions": sentence_pairs_dataset(wiki_sentences[32:64]),
    }
    losses = {"text": SimCSELoss(tiny_model), "captions": TermsLoss(tiny_model)}
    args = small_run_arguments(
        tmp_path, 4, logging_steps=1, multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN
    )
    trainer = NonLinguisticTrainer(model=tiny_model, args=args, train_dataset=datasets, loss=losses)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 4
    assert all(value == value for entry in logged for value in entry.values() if isinstance(value, float))  # no NaN
    with_terms = [entry for entry in logged if "first" in entry]
    assert [set(entry) & {"first", "second", "loss_captions"} for entry in logged] == [
        {"first", "second", "loss_captions"} if "loss_captions" in entry else set() for entry in logged
    ]
    assert len(with_terms) == 2 and all(
        entry["second"] == pytest.approx(3 * entry["first"], rel=1e-3) for entry in with_terms
    )
