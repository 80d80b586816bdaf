"""The check every config test file runs: each field a config class declares refuses bad values, naming itself."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from typing import Any, Literal, Union

import pytest


def _bad_values(annotation: Any, metadata: dict) -> list[tuple[Any, str]]:
    """(bad value, pattern of what the message says is valid) for one field's type and range."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        return [case for option in args if option is not type(None) for case in _bad_values(option, metadata)]
    if dataclasses.is_dataclass(annotation):  # a stage
        return [(3.5, "a stage: a dict of learning_rate")]
    if origin is Literal:
        return [("not-a-choice", re.escape(f"one of {list(args)}"))]
    if origin in (list, dict):
        return [(3.5, re.escape(origin.__name__))]
    if annotation is bool:
        return [("yes", "bool")]
    if annotation is str:
        return [(3, "str")]
    cases = [("abc", annotation.__name__)]  # int / float
    if metadata["minimum"] is not None:
        cases.append((metadata["minimum"] - 1, re.escape(f">= {metadata['minimum']}")))
    if metadata["above"] is not None:
        cases.append((metadata["above"], re.escape(f"> {metadata['above']}")))
    if metadata["maximum"] is not None:
        cases.append((metadata["maximum"] + 1, re.escape(f"<= {metadata['maximum']}")))
    return cases


@pytest.fixture
def check_own_fields():
    """``check_own_fields(config_class)``: for every field the class declares in its own body (not the inherited
    ones), a value of a wrong type and values outside the field's range must raise a ValueError naming the class, the
    field and what is valid. Returns the names of the fields checked."""

    def check(config_class: type) -> set[str]:
        hints = typing.get_type_hints(config_class)
        declared = set(config_class.__dict__.get("__annotations__", {}))
        fields = [item for item in dataclasses.fields(config_class) if item.name in declared]
        for item in fields:
            for value, valid in _bad_values(hints[item.name], item.metadata):
                with pytest.raises(
                    ValueError,
                    match=(
                        rf"{config_class.__name__} setting '{item.name}' must be .*{valid}.*"
                        rf"got {re.escape(repr(value))}"
                    ),
                ):
                    config_class(**{item.name: value})
        return {item.name for item in fields}

    return check
