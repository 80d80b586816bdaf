"""MethodConfig: the typed, validated settings of one training method (the fields every method shares)."""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar, Union

ConfigT = TypeVar("ConfigT", bound="MethodConfig")

#: A linear warmup then decay, or no decay (transformers' ``lr_scheduler_type`` names used by the recipes).
SchedulerType = Literal["linear", "constant", "constant_with_warmup", "cosine"]
#: Numeric precision of training: ``auto`` (bf16 on a GPU that has it, else fp16 with loss scaling on a GPU, fp32 on
#: a CPU), or one of them explicitly.
Precision = Literal["auto", "fp32", "fp16", "bf16"]


def setting(default: Any, doc: str, *, minimum: float | None = None, maximum: float | None = None, above: float | None = None) -> Any:
    """A documented config field: ``default`` (lists and dicts are copied per instance), its meaning, and an optional
    range (``minimum`` <= value <= ``maximum``, or ``value > above``) that :class:`MethodConfig` checks."""
    metadata = {"doc": doc, "minimum": minimum, "maximum": maximum, "above": above}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def paper_default(base: type[MethodConfig], name: str, default: Any) -> Any:
    """The field ``name`` of ``base`` (same meaning and range) with another method's paper default."""
    return setting(default, **{key: value for key, value in _field(base, name).metadata.items()})


def _field(config_class: type, name: str) -> dataclasses.Field:
    return next(item for item in dataclasses.fields(config_class) if item.name == name)


class SettingDescription(NamedTuple):
    """One row of :meth:`MethodConfig.describe`: ``name: type = default  meaning``."""

    name: str
    type: str
    default: Any
    meaning: str

    def __str__(self) -> str:
        return f"{self.name}: {self.type} = {self.default!r}  {self.meaning}"


class SettingTable(list):
    """:meth:`MethodConfig.describe`'s rows (a list of :class:`SettingDescription`), printed one setting a line."""

    def __str__(self) -> str:
        return "\n".join(str(row) for row in self)

    __repr__ = __str__


class _Mismatch(Exception):
    """The value does not have the declared type; the message says what was expected."""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return f"one of {list(typing.get_args(annotation))}"
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(arg) for arg in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    if origin is not None:
        return str(annotation).replace("typing.", "")
    return annotation.__name__


def _coerce(annotation: Any, value: Any) -> Any:
    """``value`` checked against ``annotation`` (int / float / bool / str, Literal, unions with None, list[...],
    dict[...]); an int is accepted (and converted) where a float is expected, a bool never counts as a number."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        if value in typing.get_args(annotation) and type(value) in {type(arg) for arg in typing.get_args(annotation)}:
            return value
        raise _Mismatch(_type_name(annotation))
    if origin in (Union, types.UnionType):
        for option in typing.get_args(annotation):
            try:
                return _coerce(option, value)
            except _Mismatch:
                continue
        raise _Mismatch(_type_name(annotation))
    if annotation is type(None):
        if value is None:
            return None
        raise _Mismatch("null")
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise _Mismatch(_type_name(annotation))
        (item_type,) = typing.get_args(annotation)
        try:
            return [_coerce(item_type, item) for item in value]
        except _Mismatch:
            raise _Mismatch(_type_name(annotation)) from None
    if origin is dict:
        if not isinstance(value, dict):
            raise _Mismatch(_type_name(annotation))
        key_type, value_type = typing.get_args(annotation)
        try:
            return {_coerce(key_type, key): _coerce(value_type, item) for key, item in value.items()}
        except _Mismatch:
            raise _Mismatch(_type_name(annotation)) from None
    if annotation is Any:
        return value
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, annotation) and not (annotation is not bool and isinstance(value, bool)):
        return value
    raise _Mismatch(_type_name(annotation))


@dataclass
class MethodConfig:
    """The settings of one training method as a typed dataclass: every field has a type, a documented meaning, a
    default equal to the method's paper row (``METHODS.md``) and, where it has one, a valid range.

    Subclasses add the fields of their method. What this base adds to a plain dataclass:

    - validation on construction: a value of the wrong type or out of range raises a ValueError naming the field, the
      value and what is valid (an int where a float is expected is converted; a bool never counts as a number);
    - :meth:`from_dict` (a recipe JSON or ``--set key=value`` overrides): an unknown key raises a ValueError naming it
      and listing the valid ones, instead of being ignored;
    - :meth:`to_dict` / :meth:`describe` for ``recipe.json``, model cards and help texts.

    Each field's meaning and range sit beside it (``setting(default, doc, ...)``); :meth:`describe` lists them.

    Example:
        ::

            from sbert_nonling.configs import VisualCSEConfig

            config = VisualCSEConfig(learning_rate=1e-5)        # the paper's BERT-base row with another text rate
            config = config.replace(modality_learning_rate=0.0)  # validated again
            try:
                VisualCSEConfig.from_dict({"learning_rate": "abc"})
            except ValueError as error:
                print(error)  # 'learning_rate' must be float, got 'abc' ...
    """

    #: The method this config trains (the ``"method"`` key of a recipe JSON).
    method: ClassVar[str] = ""
    #: Former setting name -> (current name, former value -> current value, or None if the values did not change).
    #: A former name in a recipe, ``--set``, the tiny block or :meth:`replace` still works, with a FutureWarning.
    renamed_settings: ClassVar[dict[str, tuple[str, dict[Any, Any] | None]]] = {}
    #: Whether an interrupted run continues from its newest checkpoint (``--resume``); methods that run a sequence of
    #: trainers (multitask, pixel-linguist) restart as a whole.
    resumable: ClassVar[bool] = True

    name: str = setting("", "the recipe name or a label of the run")
    description: str = setting("", "one line on what the configuration reproduces")
    reference: str = setting("", "the paper (URL or citation)")
    model: str = setting("bert-base-uncased", "Hub name or folder of the starting encoder")
    seed: int = setting(42, "seed of the trainer, the data order and every seeded draw", minimum=0)
    precision: Precision = setting(
        "auto", "auto (bf16 on a GPU with bf16, fp16 + loss scaling on an older GPU, fp32 on a CPU), fp32, fp16 (GPU) or bf16"
    )
    dataloader_num_workers: int | Literal["auto"] = setting(
        "auto", "DataLoader worker processes: auto (8 per GPU, at most the CPU cores per GPU; 0 on a CPU) or a number", minimum=0
    )
    dataloader_pin_memory: bool | Literal["auto"] = setting("auto", "page-locked batches for the GPU copy: auto (on with a GPU), true, false")
    tiny: bool = setting(False, "set when the recipe's tiny block (small offline encoder) was applied")
    lr_scheduler_type: SchedulerType = setting("linear", "transformers' learning-rate schedule")
    eval_steps: int = setting(125, "STS-B dev evaluation and checkpoint interval (optimizer steps)", minimum=1)

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            try:
                value = _coerce(hints[item.name], value)
            except _Mismatch as mismatch:
                raise ValueError(f"{self._where()} setting {item.name!r} must be {mismatch}, got {value!r} ({type(value).__name__}).") from None
            self._check_range(item, value)
            object.__setattr__(self, item.name, value)

    def _where(self) -> str:
        return f"{type(self).__name__}{f' (recipe {self.name!r})' if self.name else ''}"

    def _check_range(self, item: dataclasses.Field, value: Any) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return
        minimum, maximum, above = item.metadata["minimum"], item.metadata["maximum"], item.metadata["above"]
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum) or (above is not None and value <= above):
            valid = " and ".join(
                part
                for part in (
                    f">= {minimum}" if minimum is not None else "",
                    f"> {above}" if above is not None else "",
                    f"<= {maximum}" if maximum is not None else "",
                )
                if part
            )
            raise ValueError(f"{self._where()} setting {item.name!r} must be {valid}, got {value!r}.")

    @classmethod
    def field_names(cls) -> list[str]:
        """The valid setting names, in declaration order."""
        return [item.name for item in dataclasses.fields(cls)]

    @classmethod
    def current_names(cls, values: dict[str, Any], source: str) -> dict[str, Any]:
        """``values`` with former setting names (:attr:`renamed_settings`) replaced by the current ones and former
        values translated, warning (FutureWarning) once per former name; a setting given under both names raises."""
        current = dict(values)
        for former, (name, translation) in cls.renamed_settings.items():
            if former not in current or (former == name and (translation is None or current[former] not in translation)):
                continue
            value = current.pop(former)
            if former != name and name in current:
                raise ValueError(f"{source}: {former!r} is the former name of {name!r}; set only {name!r}.")
            if translation is not None:
                if value not in translation:
                    raise ValueError(f"{source}: {former!r} = {value!r} must be one of {list(translation)}; set {name!r} instead.")
                value = translation[value]
            warnings.warn(f"{source}: setting {former!r} is deprecated, it is now {name!r} = {value!r}.", FutureWarning, stacklevel=3)
            current[name] = value
        return current

    @classmethod
    def check_keys(cls, keys: typing.Iterable[str], source: str) -> None:
        """Raise a ValueError naming the first key of ``keys`` that is not a setting of this method (nor a former name
        of one), listing the valid ones; ``source`` says where the keys come from (a recipe file, ``--set``)."""
        valid = cls.field_names()
        unknown = [key for key in keys if key not in valid and key not in cls.renamed_settings]
        if unknown:
            raise ValueError(
                f"{source}: {unknown[0]!r} is not a setting of {cls.__name__} (method {cls.method!r}); valid settings: {', '.join(valid)}."
            )

    @classmethod
    def from_dict(cls: type[ConfigT], values: dict[str, Any], source: str = "settings") -> ConfigT:
        """A config from ``values`` (missing keys keep the paper default); unknown keys and bad values raise."""
        cls.check_keys(values, source)
        return cls(**cls.current_names(values, source))

    def replace(self: ConfigT, source: str = "overrides", **overrides: Any) -> ConfigT:
        """A copy with ``overrides`` applied, validated like a new config."""
        type(self).check_keys(overrides, source)
        return dataclasses.replace(self, **type(self).current_names(overrides, source))

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (``"method"`` first), as written to ``recipe.json``."""
        return {"method": self.method, **dataclasses.asdict(self)}

    @classmethod
    def describe(cls) -> SettingTable:
        """Every setting as a :class:`SettingDescription` (name, type, paper default, meaning), for help texts and
        docs; ``print(VisualCSEConfig.describe())`` shows one setting a line."""
        hints = typing.get_type_hints(cls)
        defaults = cls()
        return SettingTable(
            SettingDescription(item.name, _type_name(hints[item.name]), getattr(defaults, item.name), item.metadata["doc"])
            for item in dataclasses.fields(cls)
        )
