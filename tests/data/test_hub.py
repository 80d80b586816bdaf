"""Data by Hub name: only the network is mocked (``load_dataset`` hands back a local dataset in the Hub layout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Audio, ClassLabel, Dataset, Features, Image, Sequence, Value
from safetensors import safe_open

import sbert_nonling.data.hub as hub
from sbert_nonling.data import DataSources, image_folder_dataset, read_nli_triplets, read_sentences
from sbert_nonling.data.audio import audio_folder_dataset, read_audio
from sbert_nonling.data.captions import hub_caption_pairs
from sbert_nonling.data.hub import CAPTION_ROLES, HubSource, hub_source, load_hub_columns
from tests.conftest import wiki_file


@pytest.fixture
def hub_datasets(monkeypatch):
    """Registers local datasets under Hub names; records every load_dataset call."""
    registry: dict[str, Dataset] = {}
    calls = []

    def fake_load_dataset(name, config=None, split=None, data_files=None, revision=None):
        calls.append({"name": name, "config": config, "split": split, "data_files": data_files, "revision": revision})
        if name not in registry:
            raise ConnectionError(f"Couldn't reach 'https://huggingface.co/datasets/{name}'")
        return registry[name]

    monkeypatch.setattr(hub, "load_dataset", fake_load_dataset)
    return registry, calls


def test_hub_source_parses_names_options_and_leaves_local_paths_alone(tmp_path):
    (tmp_path / "wiki.txt").write_text("a\n")
    assert hub_source(str(tmp_path / "wiki.txt"), ("text",)) is None and hub_source(tmp_path, ("text",)) is None
    assert hub_source("wiki1m.txt", ("text",)) is None  # not owner/name: a (missing) local file
    source = hub_source("openslr/librispeech_asr?config=clean&split=train.100&label=speaker_id", ("audio", "label"))
    assert source == HubSource(
        "openslr/librispeech_asr", split="train.100", config="clean", columns={"label": "speaker_id"}
    )
    assert str(source) == "openslr/librispeech_asr?split=train.100&config=clean&label=speaker_id"
    with pytest.raises(
        ValueError, match=r"unknown option 'speaker'; valid options: split, config, data_files, revision, audio, label"
    ):
        hub_source("openslr/librispeech_asr?speaker=speaker_id", ("audio", "label"))
    with pytest.raises(ValueError, match="must read key=value"):
        hub_source("openslr/librispeech_asr?clean", ("audio", "label"))


def test_sentences_and_nli_triplets_by_hub_name(hub_datasets):
    registry, calls = hub_datasets
    registry["princeton-nlp/datasets-for-simcse"] = Dataset.from_dict(
        {"text": ["A first sentence.", "  ", "A second one. "]}
    )
    sentences = read_sentences("princeton-nlp/datasets-for-simcse?data_files=wiki1m_for_simcse.txt")
    assert sentences == ["A first sentence.", "A second one."]  # blank rows skipped, as blank lines are
    assert calls[-1] == {
        "name": "princeton-nlp/datasets-for-simcse",
        "config": None,
        "split": "train",
        "data_files": "wiki1m_for_simcse.txt",
        "revision": None,
    }
    registry["me/nli"] = Dataset.from_dict(
        {"premise": ["A man sings."], "hypothesis": ["A person sings."], "contradiction": ["Nobody sings."], "id": [7]}
    )
    triplets = read_nli_triplets("me/nli?sent0=premise&sent1=hypothesis&hard_neg=contradiction")
    assert triplets == [("A man sings.", "A person sings.", "Nobody sings.")]
    registry["me/nli-empty"] = Dataset.from_dict(
        {"sent0": ["A man sings."], "sent1": [""], "hard_neg": ["Nobody sings."]}
    )
    with pytest.raises(ValueError, match=r"me/nli-empty\?split=train row 0 sent1"):
        read_nli_triplets("me/nli-empty")


def test_a_missing_column_lists_the_columns_found(hub_datasets):
    registry, _ = hub_datasets
    registry["me/captions"] = Dataset.from_dict({"img": ["x.jpg"], "sentences": ["A dog."]})
    with pytest.raises(
        ValueError,
        match=r"has no column 'image' \(image\), 'caption' \(caption\); columns found: \['img', 'sentences'\]",
    ):
        load_hub_columns(HubSource("me/captions"), CAPTION_ROLES)
    with pytest.raises(ValueError, match=r"no column 'text' \(text\); columns found: \['img', 'sentences'\]"):
        read_sentences("me/captions")


def test_an_unloadable_dataset_or_a_mistyped_local_path_is_a_value_error(hub_datasets):
    with pytest.raises(
        ValueError,
        match=r"'data/wiki1m\.txt' is not a local path, and loading it as a Hub dataset "
        r"\(data/wiki1m\.txt\?split=train\) failed: ConnectionError",
    ):
        read_sentences("data/wiki1m.txt")
    with pytest.raises(ValueError) as raised:
        read_sentences("data/wiki1m.txt")
    assert "\n" not in str(raised.value) and str(raised.value).endswith(
        "Offline, pass a local path instead: a text file of one sentence per line."
    )
    with pytest.raises(ValueError, match="local path instead: a CSV file with the columns sent0,sent1,hard_neg"):
        read_nli_triplets("data/nli.csv")


def test_image_classification_dataset_by_hub_name(hub_datasets, data_dir):
    registry, calls = hub_datasets
    folder = data_dir / "images" / "cifar10" / "train"
    classes = sorted(entry.name for entry in folder.iterdir())[:2]
    paths = [path for name in classes for path in sorted((folder / name).iterdir())[:3]]
    labels = [classes.index(path.parent.name) for path in paths]
    features = Features({"img": Image(), "label": ClassLabel(names=classes)})
    registry["uoft-cs/cifar10"] = Dataset.from_dict(
        {"img": [str(path) for path in paths], "label": labels}, features=features
    )
    dataset, names = image_folder_dataset("uoft-cs/cifar10?image=img", image_size=16, limit_per_class=2)
    assert names == classes and len(dataset) == 4 and dataset["label"] == [0, 0, 1, 1]
    item = dataset[2]
    assert item["view_1"].size == item["view_2"].size == (16, 16) and item["label"] == 1
    assert calls[-1]["name"] == "uoft-cs/cifar10" and calls[-1]["split"] == "train"


def test_audio_dataset_by_hub_name_labels_by_its_column_and_decodes_bytes(hub_datasets, data_dir):
    registry, _ = hub_datasets
    paths = sorted((data_dir / "audio" / "fsdd").iterdir())[:4]
    clips = [{"bytes": path.read_bytes(), "path": path.name} for path in paths]
    features = Features(
        {
            "audio": {"bytes": Value("binary"), "path": Value("string")},
            "speaker_id": Value("int64"),
            "text": Value("string"),
        }
    )
    layout = Dataset.from_dict(
        {"audio": clips, "speaker_id": [103, 1034, 103, 19], "text": ["a", "b", "c", "d"]}, features=features
    )
    registry["openslr/librispeech_asr"] = layout.cast_column("audio", Audio())  # the Hub's decoding Audio feature
    dataset, classes = audio_folder_dataset(
        "openslr/librispeech_asr?config=clean&split=train.100&label=speaker_id", limit=3
    )
    assert classes == ["103", "1034"] and len(dataset) == 3 and dataset["label"] == [0, 1, 0]
    item = dataset[1]
    expected = read_audio(paths[1])
    assert item["view_1"]["sampling_rate"] == expected["sampling_rate"]
    assert (item["view_1"]["array"] == expected["array"]).all() and item["view_2"] is item["view_1"]
    balanced, _ = audio_folder_dataset(
        "openslr/librispeech_asr?config=clean&split=train.100&label=speaker_id", limit_per_class=1
    )
    assert balanced["label"] == [0, 1, 2]  # speakers 103, 1034, 19: one clip each
    with pytest.raises(ValueError, match="pass label_fn"):
        audio_folder_dataset(data_dir / "audio" / "fsdd")


def _flickr_layout(flickr_subset: Path, images: int = 4) -> Dataset:
    """Flickr30k's Hub layout: the image, its captions as a list, its file name."""
    by_image: dict[str, list[str]] = {}
    for line in (flickr_subset / "captions.txt").read_text(encoding="utf-8").splitlines():
        name, _, caption = line.partition("\t")
        by_image.setdefault(name.split("#")[0], []).append(caption)
    names = sorted(by_image)[:images]
    features = Features({"image": Image(), "caption": Sequence(Value("string")), "filename": Value("string")})
    rows = {
        "image": [str(flickr_subset / "images" / name) for name in names],
        "caption": [by_image[name] for name in names],
        "filename": names,
    }
    return Dataset.from_dict(rows, features=features)


def test_caption_dataset_by_hub_name_pairs_every_caption_with_its_image(hub_datasets, flickr_subset):
    registry, calls = hub_datasets
    registry["nlphuji/flickr30k"] = _flickr_layout(flickr_subset)
    pairs, images = hub_caption_pairs(hub_source("nlphuji/flickr30k?split=test", CAPTION_ROLES))
    assert len(pairs) == 20 and len(images) == 4
    assert all(name in images for name, _ in pairs) and all(
        name.endswith(".jpg") for name in images
    )  # the files' names
    # MS-COCO's layout: captions in a field of a struct column, named column.field; a script dataset's parquet revision
    flickr = _flickr_layout(flickr_subset, images=2)
    coco = Dataset.from_dict(
        {"image": flickr["image"], "sentences": [{"raw": captions[:2]} for captions in flickr["caption"]]}
    )
    registry["bitmind/MS-COCO"] = coco.cast_column("image", Image())
    pairs, images = hub_caption_pairs(
        hub_source("bitmind/MS-COCO?caption=sentences.raw&revision=refs/convert/parquet", CAPTION_ROLES)
    )
    assert len(pairs) == 4 and len(images) == 2 and calls[-1]["revision"] == "refs/convert/parquet"


@pytest.mark.slow
def test_mcse_trains_on_a_hub_caption_dataset(hub_datasets, flickr_subset, data_dir, tmp_path):
    from sbert_nonling.app import train_recipe

    registry, _ = hub_datasets
    registry["nlphuji/flickr30k"] = _flickr_layout(flickr_subset)
    result = train_recipe(
        "mcse",
        tmp_path / "run",
        DataSources(text_file=wiki_file(tmp_path / "wiki.txt", 64), captions_file="nlphuji/flickr30k?split=test"),
        tiny=True,
        max_steps=3,
    )
    assert result["global_step"] == 3 and result["step_counts"] == {
        "text": 2,
        "captions": 1,
    }  # a caption batch trained
    with safe_open(str(tmp_path / "run" / "image_features.safetensors"), framework="pt") as handle:
        names = json.loads(handle.metadata()["names"])
        assert len(names) == 4 and handle.get_tensor("global").shape == (4, 1280)
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    assert "captions_file: nlphuji/flickr30k?split=test" in card
