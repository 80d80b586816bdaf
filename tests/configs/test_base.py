"""MethodConfig: typed fields, conversion, ranges and unknown keys, all reported as ValueErrors naming the setting."""

from __future__ import annotations

import dataclasses

import pytest

from sbert_nonling.configs import (
    METHOD_CONFIGS,
    MCSEConfig,
    MultitaskConfig,
    PixelLinguistConfig,
    StageConfig,
    VisualCSEConfig,
)
from sbert_nonling.configs.base import Settings


def test_an_int_where_a_float_is_expected_is_converted_and_a_bool_is_not_a_number():
    config = VisualCSEConfig(learning_rate=1, modality_learning_rate=0)
    assert (
        isinstance(config.learning_rate, float)
        and config.learning_rate == 1.0
        and config.modality_learning_rate == 0.0
    )
    with pytest.raises(ValueError, match=r"'batch_size' must be int, got True \(bool\)"):
        VisualCSEConfig(batch_size=True)
    with pytest.raises(ValueError, match=r"'dataloader_pin_memory' must be bool or one of \['auto'\], got 1 \(int\)"):
        VisualCSEConfig(dataloader_pin_memory=1)
    with pytest.raises(ValueError, match=r"'precision' must be one of \['auto', 'fp32', 'fp16', 'bf16'\], got 'fp8'"):
        VisualCSEConfig(precision="fp8")
    with pytest.raises(ValueError, match=r"'dataloader_num_workers' must be >= 0, got -1"):
        VisualCSEConfig(dataloader_num_workers=-1)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"learning_rate": "abc"}, r"'learning_rate' must be float, got 'abc' \(str\)"),
        ({"pooling": "max"}, r"'pooling' must be one of \['cls', 'cls_mlp', 'mean', 'lasttoken'\], got 'max'"),
        ({"batch_size": 0}, r"'batch_size' must be >= 1, got 0"),
        ({"text_loss.temperature": 0.0}, r"block 'text_loss': .*'temperature' must be > 0.0, got 0.0"),
        ({"max_steps": -2}, r"'max_steps' must be >= -1, got -2"),
        ({"images_per_class": "all"}, r"'images_per_class' must be int or null, got 'all'"),
        ({"vit": 3}, r"'vit' must be str or null, got 3 \(int\)"),
    ],
)
def test_wrong_types_and_out_of_range_values_name_the_setting(overrides, message):
    with pytest.raises(ValueError, match=message):
        VisualCSEConfig().replace(**overrides)


def test_an_unknown_key_is_refused_with_the_valid_settings():
    with pytest.raises(
        ValueError, match=r"--set: 'bogus' is not a setting of VisualCSEConfig .*valid settings: name, .*image_size"
    ):
        VisualCSEConfig.from_dict({"learning_rate": 1e-5, "bogus": 1}, source="--set")


def test_replace_keeps_the_other_settings_and_leaves_the_original_alone():
    paper = VisualCSEConfig()
    changed = paper.replace(modality_learning_rate=0.0, images_per_class=None)
    assert changed.modality_learning_rate == 0.0 and paper.modality_learning_rate == 1e-6
    assert {key: value for key, value in dataclasses.asdict(changed).items() if key != "modality_learning_rate"} == {
        key: value for key, value in dataclasses.asdict(paper).items() if key != "modality_learning_rate"
    }


def test_nested_lists_and_dicts_are_checked_and_copied_per_instance():
    pixel = METHOD_CONFIGS["pixel_linguist"]
    with pytest.raises(ValueError, match=r"'perturbation_sets' must be list\[list\[str\]\], got \[\['swap', 3\]\]"):
        pixel(perturbation_sets=[["swap", 3]])
    first, second = pixel(), pixel()
    first.perturbation_sets[0].append("swap")
    assert second.perturbation_sets[0] == ["insert"]


def test_every_setting_is_documented_and_to_dict_names_the_method():
    for method, config_class in METHOD_CONFIGS.items():
        described = config_class.describe()
        blocks = {name: type(value) for name, value in vars(config_class()).items() if isinstance(value, Settings)}
        expected = [
            f"{name}.{key}" if name in blocks else name
            for name in config_class.field_names()
            for key in (blocks[name].field_names() if name in blocks else [""])
        ]
        assert [name for name, *_ in described] == expected
        assert all(meaning for *_, meaning in described), method
        assert config_class().to_dict()["method"] == method


def test_describe_prints_one_readable_line_per_setting():
    """Issue 26: describe() returned raw tuples."""
    described = VisualCSEConfig.describe()
    row = next(row for row in described if row.name == "images_per_class")
    assert (row.type, row.default) == ("int or null", None)
    assert str(row) == "images_per_class: int or null = None  images read per class folder (null: all)"
    assert str(described).splitlines()[described.index(row)] == str(row) and repr(described) == str(described)


def test_a_stage_takes_what_differs_as_a_dict_or_dotted_keys_and_names_a_bad_one():
    config = MultitaskConfig.from_dict({"contrastive": {"batch_size": 128}}, "a recipe")
    assert (config.contrastive.batch_size, config.contrastive.learning_rate, config.multitask.epochs) == (
        128,
        3e-5,
        10,
    )  # the rest kept
    assert config.replace(**{"multitask.max_steps": 5}).multitask == StageConfig(
        learning_rate=1e-5, batch_size=32, epochs=10, max_steps=5
    )
    assert MultitaskConfig(contrastive={"warmup_steps": 7}).contrastive.warmup_steps == 7
    assert config.to_dict()["contrastive"] == {
        "learning_rate": 3e-5,
        "batch_size": 128,
        "epochs": 1,
        "max_steps": -1,
        "warmup_steps": 0,
    }
    assert (
        set(PixelLinguistConfig().stages()) == {"visual", "topical", "reasoning", "parallel"}
        and MCSEConfig().stages() == {}
    )
    with pytest.raises(
        ValueError,
        match=r"a recipe: 'contrastive.lr' is not a setting of StageConfig; valid settings: learning_rate, batch_size",
    ):
        MultitaskConfig.from_dict({"contrastive": {"lr": 1e-5}}, "a recipe")
    with pytest.raises(ValueError, match=r"--set: 'visual.lr' is not a setting of StageConfig"):
        PixelLinguistConfig().replace("--set", **{"visual.lr": 1e-5})
    with pytest.raises(
        ValueError, match=r"--set: block 'visual': StageConfig setting 'batch_size' must be >= 1, got 0"
    ):
        PixelLinguistConfig().replace("--set", **{"visual.batch_size": 0})
    with pytest.raises(ValueError, match=r"'image_dims' is not a setting of MCSEConfig \(method 'mcse'\)"):
        MCSEConfig.from_dict({"image_dims": 1280})
