"""MethodConfig: the typed, validated settings of one training method (the fields every method shares)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar, Union

from sbert_nonling.util.choices import EvalTasks, Precision

ConfigT = TypeVar("ConfigT", bound="Settings")

#: A linear warmup then decay, or no decay (transformers' ``lr_scheduler_type`` names used by the recipes).
SchedulerType = Literal["linear", "constant", "constant_with_warmup", "cosine"]
#: How training batches of text are padded (:attr:`MethodConfig.padding`).
Padding = Literal["auto", "longest", "max_length"]


def setting(
    default: Any, doc: str, *, minimum: float | None = None, maximum: float | None = None, above: float | None = None
) -> Any:
    """A documented config field, with an optional range that :class:`Settings` checks on construction.

    Args:
        default: the paper's value; a list, a dict or a block (:class:`Settings`) is copied for every instance.
        doc: the setting's meaning, one line (shown by :meth:`Settings.describe`).
        minimum: the smallest valid value (``value >= minimum``), or None.
        maximum: the largest valid value (``value <= maximum``), or None.
        above: the value must be strictly greater (``value > above``), or None.

    Example::

        import dataclasses

        from sbert_nonling.configs import GroundingLossConfig

        # declared as: temperature: float = setting(0.05, "temperature of the grounding softmax", above=0.0)
        temperature = next(item for item in dataclasses.fields(GroundingLossConfig) if item.name == "temperature")
        print(temperature.default, temperature.metadata["above"])  # 0.05 0.0
    """
    metadata = {"doc": doc, "minimum": minimum, "maximum": maximum, "above": above}
    if isinstance(default, (list, dict, Settings)):
        return field(default_factory=functools.partial(copy.deepcopy, default), metadata=metadata)
    return field(default=default, metadata=metadata)


def paper_default(base: type[MethodConfig], name: str, default: Any) -> Any:
    """The field ``name`` of ``base`` (same meaning and range) with another method's paper default.

    Args:
        base: the config class that declares the field.
        name: the field's name.
        default: this method's paper value.

    Example::

        from sbert_nonling.configs import MCSEConfig, SingleRunConfig

        # MCSEConfig declares: epochs: int = paper_default(SingleRunConfig, "epochs", 3)
        print(SingleRunConfig().epochs, MCSEConfig().epochs)  # 1 3
    """
    return setting(default, **next(item for item in dataclasses.fields(base) if item.name == name).metadata)


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
    if isinstance(annotation, type) and issubclass(annotation, Settings):
        return f"a dict of {', '.join(annotation.field_names())}"
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
    if origin in (list, dict):
        if not isinstance(value, (list, tuple) if origin is list else dict):
            raise _Mismatch(_type_name(annotation))
        arguments = typing.get_args(annotation)
        try:
            if isinstance(value, dict):
                return {_coerce(arguments[0], key): _coerce(arguments[1], item) for key, item in value.items()}
            return [_coerce(arguments[0], item) for item in value]
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
class Settings:
    """Typed, validated settings: every field has a type, a documented meaning (``setting(default, doc, ...)``) and,
    where it has one, a valid range, checked on construction (a ValueError names the field, the value and what is
    valid; an int is converted where a float is expected; a bool is never a number). :meth:`from_dict` /
    :meth:`replace` take a recipe JSON, its tiny block or ``--set key=value`` (an unknown key is named, the valid ones
    listed); a field that is itself :class:`Settings` (a block: a stage's optimizer settings, a loss's settings) takes
    a dict of what differs, or dotted keys (``contrastive.learning_rate``, ``grounding.weight``). :meth:`to_dict` /
    :meth:`describe` serve ``recipe.json``, cards and help texts.

    Example::

        from sbert_nonling.configs import TaskHeadsConfig

        print(TaskHeadsConfig.from_dict({"dropout": 0.1}).dropout)  # 0.1
        try:
            TaskHeadsConfig(dropout=2.0)
        except ValueError as error:
            print(error)  # TaskHeadsConfig setting 'dropout' must be >= 0.0 and <= 1.0, got 2.0.
    """

    #: Whether the block is a stage of a multi-stage method (:meth:`MethodConfig.stages`).
    is_stage: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Append to a settings class's docstring an ``Args:`` section listing the settings it declares, each with the
        meaning its ``setting(default, doc)`` gives: one text serves ``help()``, :meth:`describe` and the CLI's help.

        Args:
            **kwargs: ``object.__init_subclass__``'s.
        """
        super().__init_subclass__(**kwargs)
        declared = [
            f"        {name}: {value.metadata['doc']}."
            for name, value in vars(cls).items()
            if isinstance(value, dataclasses.Field) and "doc" in value.metadata
        ]
        if declared and cls.__doc__:
            cls.__doc__ = cls.__doc__.rstrip() + "\n\n    Args:\n" + "\n".join(declared) + "\n"

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            annotation = hints[item.name]
            if isinstance(value, dict) and isinstance(annotation, type) and issubclass(annotation, Settings):
                default = item.default_factory() if item.default_factory is not dataclasses.MISSING else annotation()
                value = default.replace(f"{self._where()} setting {item.name!r}", f"{item.name}.", **value)
            try:
                value = _coerce(hints[item.name], value)
            except _Mismatch as mismatch:
                got = f"{value!r} ({type(value).__name__})"
                raise ValueError(f"{self._where()} setting {item.name!r} must be {mismatch}, got {got}.") from None
            self._check_range(item, value)
            object.__setattr__(self, item.name, value)

    def _where(self) -> str:
        return type(self).__name__

    def _check_range(self, item: dataclasses.Field, value: Any) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return
        minimum, maximum, above = item.metadata["minimum"], item.metadata["maximum"], item.metadata["above"]
        if (
            (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)
            or (above is not None and value <= above)
        ):
            valid = " and ".join(
                f"{sign} {bound}"
                for sign, bound in ((">=", minimum), (">", above), ("<=", maximum))
                if bound is not None
            )
            raise ValueError(f"{self._where()} setting {item.name!r} must be {valid}, got {value!r}.")

    @classmethod
    def field_names(cls) -> list[str]:
        """The valid setting names, in declaration order."""
        return [item.name for item in dataclasses.fields(cls)]

    @classmethod
    def check_keys(cls, keys: typing.Iterable[str], source: str, prefix: str = "") -> None:
        """Raise a ValueError naming the first key of ``keys`` that is not a setting, listing the valid ones.

        Args:
            keys: the keys to check.
            source: where the keys come from (a recipe file, ``--set``), named in the error.
            prefix: put before the key in the error: a block's name and a dot where a block's keys are checked.
        """
        valid = cls.field_names()
        unknown = [key for key in keys if key not in valid]
        if unknown:
            raise ValueError(
                f"{source}: {prefix + unknown[0]!r} is not a setting of {cls._kind()}; "
                f"valid settings: {', '.join(valid)}."
            )

    @classmethod
    def _kind(cls) -> str:
        return cls.__name__

    @classmethod
    def from_dict(cls: type[ConfigT], values: dict[str, Any], source: str = "settings") -> ConfigT:
        """Settings from ``values`` (missing keys keep the paper default; a block's dict holds only what differs from
        its default); unknown keys and bad values raise a ValueError.

        Args:
            values: the settings, e.g. a recipe JSON's.
            source: where the values come from, named in errors.
        """
        return cls().replace(source, **values)

    def replace(self: ConfigT, source: str = "overrides", prefix: str = "", **overrides: Any) -> ConfigT:
        """A copy with ``overrides`` applied, validated like new settings. ``block.key`` (dotted) or ``block={key:
        value}`` changes those settings of a block and keeps its others.

        Args:
            source: where the overrides come from (a recipe file, ``--set``), named in errors.
            prefix: the block's name and a dot, where a block is replaced (named in errors).
            overrides: the settings to change.
        """
        nested: dict[str, Any] = {}
        for key, value in overrides.items():
            stage, dot, rest = key.partition(".")
            if dot:
                nested.setdefault(stage, {})[rest] = value
            else:
                nested[key] = value
        type(self).check_keys(nested, source, prefix)
        for name, value in nested.items():
            current = getattr(self, name)
            if isinstance(current, Settings) and isinstance(value, dict):
                nested[name] = current.replace(source, f"{prefix}{name}.", **value)
        try:
            return dataclasses.replace(self, **nested)
        except ValueError as error:
            if not prefix:
                raise
            raise ValueError(f"{source}: block {prefix[:-1]!r}: {error}") from None

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (a stage as a nested dict), as written to ``recipe.json``."""
        return dataclasses.asdict(self)

    @classmethod
    def describe(cls) -> SettingTable:
        """Every setting as a :class:`SettingDescription` (name, type, paper default, meaning; a stage's settings
        one by one, as ``stage.key``), for help texts and docs; ``print(VisualCSEConfig.describe())`` shows one
        setting a line."""
        hints = typing.get_type_hints(cls)
        defaults = cls()
        rows = SettingTable()
        for item in dataclasses.fields(cls):
            default = getattr(defaults, item.name)
            if isinstance(default, Settings):
                rows.extend(
                    row._replace(name=f"{item.name}.{row.name}", default=getattr(default, row.name))
                    for row in type(default).describe()
                )
            else:
                rows.append(SettingDescription(item.name, _type_name(hints[item.name]), default, item.metadata["doc"]))
        return rows


@dataclass
class MethodConfig(Settings):
    """The settings of one training method (:class:`Settings`): the fields every method shares; subclasses add their
    method's, each with a default equal to the method's paper row (the method config's docstring gives the row).

    Example::

        from sbert_nonling.configs import MultitaskConfig, VisualCSEConfig

        config = VisualCSEConfig(learning_rate=1e-5)        # the paper's BERT-base row with another text rate
        config = config.replace(modality_learning_rate=0.0)  # validated again
        stages = MultitaskConfig().replace(**{"contrastive.batch_size": 128})  # one setting of one stage
        print(stages.contrastive.batch_size, stages.contrastive.learning_rate)  # 128 3e-05
        try:
            VisualCSEConfig.from_dict({"learning_rate": "abc"})
        except ValueError as error:
            print(error)  # 'learning_rate' must be float, got 'abc' ...
    """

    #: The method this config trains (the ``"method"`` key of a recipe JSON).
    method: ClassVar[str] = ""
    #: Whether an interrupted run continues from its newest checkpoint (``--resume``); methods that run a sequence of
    #: trainers (multitask, pixel-linguist) restart as a whole.
    resumable: ClassVar[bool] = True
    #: The settings every ``--tiny`` run of the method starts from, before its recipe's tiny block (settings shared by
    #: the small offline runs of several recipes live here once).
    tiny_defaults: ClassVar[dict[str, Any]] = {}

    name: str = setting("", "the recipe name or a label of the run")
    description: str = setting("", "one line on what the configuration reproduces")
    reference: str = setting("", "the paper (URL or citation)")
    model: str = setting(
        "bert-base-uncased", "Hub name or folder of the starting encoder, or a tiny model name (tiny:bert, tiny:pixel)"
    )
    seed: int = setting(42, "seed of the trainer, the data order and every seeded draw", minimum=0)
    precision: Precision = setting(
        "auto", "auto (bf16 or fp16 + loss scaling on a GPU, fp32 on a CPU), fp32, fp16 (GPU) or bf16"
    )
    compile: bool | Literal["auto"] = setting(
        "auto",
        "torch.compile each training loss, the model's forward included (one graph per loss on torch 2.14, a few on "
        "2.11), and drop an epoch's short last batch: auto (on when training on a CUDA GPU, off on a CPU or MPS), "
        "true, false",
    )
    padding: Padding = setting(
        "auto",
        "text padding of training batches: longest (the batch's longest sentence), max_length (max_seq_length: one "
        "shape for every batch, so a compiled graph is built once) or auto (max_length when the losses are compiled)",
    )
    dataloader_num_workers: int | Literal["auto"] = setting(
        "auto",
        "DataLoader worker processes: auto (8 per GPU, at most the CPU cores per GPU; 0 on a CPU) or a number",
        minimum=0,
    )
    dataloader_pin_memory: bool | Literal["auto"] = setting(
        "auto", "page-locked batches for the GPU copy: auto (on with a GPU), true, false"
    )
    tiny: bool = setting(False, "set when the recipe's tiny block (small offline encoder) was applied")
    lr_scheduler_type: SchedulerType = setting("linear", "transformers' learning-rate schedule")
    eval_steps: int = setting(125, "STS-B dev evaluation and checkpoint interval (optimizer steps)", minimum=1)
    eval_tasks: EvalTasks = setting(
        "selection",
        "what the evaluation every eval_steps scores: selection (STS-B dev alone, which selects the best checkpoint) "
        "or "
        "all (every dev task of the STS folder); dev_before / dev_after score all of them either way",
    )

    def _where(self) -> str:
        return f"{type(self).__name__}{f' (recipe {self.name!r})' if self.name else ''}"

    @classmethod
    def _kind(cls) -> str:
        return f"{cls.__name__} (method {cls.method!r})"

    def stages(self) -> dict[str, Any]:
        """The stages of a multi-stage method by name (its :class:`~sbert_nonling.configs.StageConfig` fields); none
        for a single-run method. Only the stages are read (their declared type says which fields they are)."""
        hints = typing.get_type_hints(type(self))
        return {
            item.name: getattr(self, item.name)
            for item in dataclasses.fields(self)
            if getattr(hints[item.name], "is_stage", False)
        }

    def trains_on(self, source: str) -> bool:
        """Whether a run with these settings trains on the data source ``source``, one of its method's
        ``training_sources`` (:class:`~sbert_nonling.configs.MethodSpec`): the model cards list those it does. A
        source that only a switched-off part of the method reads (a stage left out) is not trained on.

        Args:
            source: a :class:`~sbert_nonling.data.DataSources` field, e.g. ``"sts_dir"``.
        """
        return True

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (``"method"`` first, a block as a nested dict), as written to
        ``recipe.json``."""
        return {"method": self.method, **super().to_dict()}
