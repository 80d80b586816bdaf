from __future__ import annotations

import contextlib

import numpy as np
import pytest
from datasets import Dataset, Features, Value
from datasets import Image as ImageFeature
from PIL import Image

from sbert_nonling.data import image_folder_dataset, image_pairs_dataset, two_view_image_dataset


def test_class_folders_become_two_views_and_labels(data_dir):
    dataset, classes = image_folder_dataset(
        data_dir / "images" / "imagenette" / "train", image_size=32, limit_per_class=2
    )
    assert len(dataset) == 20 and len(classes) == 10 and classes[0] == "n01440764"
    rows = dataset[0:3]
    assert set(rows) == {"view_1", "view_2", "label"} and rows["label"] == [0, 0, 1]
    assert all(view.size == (32, 32) and view.mode == "RGB" for view in rows["view_1"] + rows["view_2"])
    assert not np.array_equal(
        np.asarray(rows["view_1"][0]), np.asarray(rows["view_2"][0])
    )  # independent augmentations


def test_hf_dataset_with_an_image_feature_and_pairs(data_dir):
    photo = Image.open(data_dir / "images" / "cifar10" / "train" / "dog" / "0000.jpg")
    hf = Dataset.from_dict(
        {"img": [photo, photo.convert("L")], "cls": [1, 2]},
        features=Features({"img": ImageFeature(), "cls": Value("int64")}),
    )
    views = two_view_image_dataset(hf, image_column="img", label_column="cls", image_size=16)[:]
    assert views["label"] == [1, 2] and views["view_2"][1].mode == "RGB"
    pairs = image_pairs_dataset([(np.zeros((8, 8, 3), np.uint8), 0), (photo, 1)], image_size=16)
    assert pairs[:]["label"] == [0, 1]
    with pytest.raises(ValueError, match=r"no column\(s\) \['label'\]"):
        two_view_image_dataset(hf, image_column="img")


def test_folder_errors_name_the_path(tmp_path, data_dir):
    with pytest.raises(ValueError, match="does not exist"):
        image_folder_dataset(tmp_path / "missing")
    (tmp_path / "empty_class").mkdir()
    with pytest.raises(ValueError, match="No images"):
        image_folder_dataset(tmp_path)
    (tmp_path / "empty_class" / "broken.jpg").write_bytes(b"not an image")
    dataset, _ = image_folder_dataset(tmp_path, image_size=16)
    with pytest.raises(ValueError, match=r"Cannot decode image .*broken.jpg"):
        dataset[0]


def test_a_seeded_row_seeds_the_views_and_leaves_the_global_rng_alone(data_dir):
    import datasets
    import torch

    from sbert_nonling.data.images import SeededRow, TwoViewDataset, image_folder_dataset, two_view_transform_of

    dataset, _ = image_folder_dataset(data_dir / "images" / "cifar10" / "train", image_size=32, limit_per_class=1)
    assert isinstance(dataset, TwoViewDataset) and two_view_transform_of(dataset) is not None
    assert two_view_transform_of(datasets.Dataset.from_dict({"label": [0]})) is None

    def pixels(row):
        item = dataset[row]
        return [torch.tensor(list(item[name].getdata())) for name in ("view_1", "view_2")]

    state = torch.get_rng_state()
    first = pixels(SeededRow(0, draw=3))
    assert torch.equal(torch.get_rng_state(), state)  # seeded views draw nothing from the global RNG
    torch.manual_seed(123)
    again = pixels(SeededRow(0, draw=3))
    assert all(torch.equal(a, b) for a, b in zip(first, again))  # same (row, draw): same views
    assert not torch.equal(first[0], first[1])  # the two views still differ
    assert not torch.equal(pixels(SeededRow(0, draw=4))[0], first[0])  # the next pass: new views
    assert not torch.equal(pixels(0)[0], first[0]) and not torch.equal(
        torch.get_rng_state(), state
    )  # plain: global RNG
    assert two_view_transform_of(dataset).draw is None  # the seed lasts one read


def test_seeded_views_are_the_same_in_any_number_of_dataloader_workers(data_dir):
    """The draw travels with the index: a ConcatDataset read by 0 or 2 (persistent) workers serves the same views."""
    import pickle

    import torch
    from torch.utils.data import ConcatDataset, DataLoader

    from sbert_nonling.data.images import SeededRow, image_folder_dataset

    dataset, _ = image_folder_dataset(data_dir / "images" / "cifar10" / "train", image_size=16, limit_per_class=2)
    concat = ConcatDataset([list(range(5)), dataset])
    row = pickle.loads(pickle.dumps(SeededRow(7, draw=2)))
    assert row == 7 and row.draw == 2 and (row - 5).draw == 2 and repr(row - 5) == "SeededRow(2, draw=2)"
    batches = [[SeededRow(5 + row, draw) for row in range(4)] for draw in range(4)]

    def read(workers: int) -> list[torch.Tensor]:
        loader = DataLoader(
            concat,
            batch_sampler=batches,
            num_workers=workers,
            persistent_workers=workers > 0,
            collate_fn=lambda items: torch.stack([torch.tensor(list(item["view_1"].getdata())) for item in items]),
        )
        return [batch for _ in range(2) for batch in loader]  # two epochs: persistent workers are reused

    torch.manual_seed(0)
    in_process = read(0)
    torch.manual_seed(1)
    in_workers = read(2)
    assert all(torch.equal(a, b) for a, b in zip(in_process, in_workers)) and len(in_workers) == 8
    assert not torch.equal(in_process[0], in_process[1])  # another draw, other views


def test_one_class_or_empty_class_folders_are_named_in_a_warning(tmp_path, data_dir, caplog):
    import logging
    import shutil

    (tmp_path / "cat").mkdir()
    (tmp_path / "empty").mkdir()
    for path in sorted((data_dir / "images" / "cifar10" / "train" / "cat").iterdir())[:2]:
        shutil.copy(path, tmp_path / "cat" / path.name)
    with caplog.at_level(logging.WARNING, logger="sbert_nonling.data.images"):
        dataset, classes = image_folder_dataset(tmp_path, image_size=16)
    assert classes == ["cat", "empty"] and len(dataset) == 2
    assert "class folder(s) ['empty'] hold no images" in caplog.text
    assert "all images are in one class folder; a supervised contrastive loss (supcon)" in caplog.text


def test_seeded_views_seed_the_cpu_generator_alone(data_dir):
    """The seeded views are those of the CPU generator seeded by (seed, row, draw), as torch.manual_seed of the same
    number gives (the views of earlier runs); no accelerator's generator is seeded: fork_rng(devices=[]) would not
    restore it, and seeding one whose runtime is not started formats the Python stack."""
    import unittest.mock

    import torch

    from sbert_nonling.data.images import SeededRow, decode_image, image_folder_dataset, two_view_transform_of

    dataset, _ = image_folder_dataset(data_dir / "images" / "cifar10" / "train", image_size=32, limit_per_class=2)
    transform = two_view_transform_of(dataset)
    accelerators = [module for module in (torch.cuda, torch.xpu, torch.mtia) if hasattr(module, "manual_seed_all")]
    with contextlib.ExitStack() as stack:
        seeding = [
            stack.enter_context(unittest.mock.patch.object(module, "manual_seed_all", wraps=module.manual_seed_all))
            for module in accelerators
        ]
        item = dataset[SeededRow(1, draw=5)]
    assert accelerators and not any(spy.called for spy in seeding)
    torch.manual_seed((transform.seed * 1_000_003 + 1) * 1_000_033 + 5)
    image = decode_image(dataset.data.column("image")[1].as_py(), 1)
    expected = [transform.augment(image), transform.augment(image)]
    assert [list(item[name].getdata()) for name in ("view_1", "view_2")] == [list(view.getdata()) for view in expected]
