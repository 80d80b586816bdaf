"""The shared value sets: imported without torch, each the one vocabulary of the settings that use it, refused outside
it with a sentence naming every value."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import typing

import pytest

import sbert_nonling.configs as configs
from sbert_nonling.evaluation.sts_data import load_sts_dir
from sbert_nonling.util import choices
from sbert_nonling.util.heads import make_training_head

ALIASES = {name: value for name, value in vars(choices).items() if typing.get_origin(value) is typing.Literal}


def config_settings(alias: object) -> list[tuple[type, str]]:
    """Every (config class, setting) whose type is ``alias`` or a union holding it, over the configs the package
    exports."""
    found = []
    for name, value in vars(configs).items():
        if not (name.endswith("Config") and dataclasses.is_dataclass(value)):
            continue
        hints = typing.get_type_hints(value)
        for item in dataclasses.fields(value):
            if hints[item.name] == alias or alias in typing.get_args(hints[item.name]):
                found.append((value, item.name))
    return found


def test_the_value_sets_import_no_torch():
    code = "import sys, sbert_nonling.util.choices; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("name", [name for name in ALIASES if name != "Split"])
def test_a_config_refuses_a_value_outside_the_set_naming_every_value(name):
    alias = ALIASES[name]
    settings = config_settings(alias)
    assert settings, f"{name} is a setting of no config"
    refused = 0
    for config_class, setting in settings:
        try:
            config_class(**{setting: "not-a-choice"})
        except TypeError:
            continue  # a sub-config with required settings of its own: checked through another class
        except ValueError as error:
            message = str(error)
            assert f"setting {setting!r} must be one of" in message, message
            assert all(repr(value) in message for value in typing.get_args(alias)), message
            refused += 1
        else:
            raise AssertionError(f"{config_class.__name__}({setting}='not-a-choice') was accepted")
    assert refused, f"no config class of {name} could be built to check it"


def test_code_that_checks_a_value_at_run_time_reads_the_same_set(tmp_path):
    splits = list(typing.get_args(choices.Split))
    with pytest.raises(ValueError, match=re.escape(f"split='train' must be one of {splits}")):
        load_sts_dir(tmp_path, split="train")  # type: ignore[arg-type]
    heads = list(typing.get_args(choices.TrainingHead))
    with pytest.raises(ValueError, match=re.escape(f"training_head='deep' must be one of {heads}")):
        make_training_head("deep", 8, name="training_head")  # type: ignore[arg-type]
