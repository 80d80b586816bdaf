"""The method registry: one :class:`MethodSpec` per training method (its config class, its builder and the data it
trains on), registered with :func:`register_method` and looked up by the ``"method"`` name a recipe gives.

A bundled method registers in the module that declares its config (``sbert_nonling/configs/<method>.py``), naming
its builder by import path: that module loads no torch, so the command line checks a recipe against its method's
config before any heavy import, and the builder is imported when a run needs it. A method of your own registers in
your module, which a recipe's ``"import"`` key or an entry point of the group :data:`ENTRY_POINT_GROUP` names
(docs/adding_a_method.md); it may pass its builder itself."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, TypeVar

from sbert_nonling.configs.base import MethodConfig

if TYPE_CHECKING:
    from sbert_nonling.data.sources import DataSources

#: The entry-point group of the methods an installed distribution brings: each entry point names a module whose
#: import registers them (``[project.entry-points."sbert_nonling.methods"]`` in its ``pyproject.toml``).
ENTRY_POINT_GROUP = "sbert_nonling.methods"
#: A method's builder: ``builder(config, data)`` -> the :class:`~sbert_nonling.methods.MethodPlan` of a run.
Builder = Callable[[Any, "DataSources"], Any]

T = TypeVar("T")


@dataclass(frozen=True)
class MethodSpec:
    """One training method as the package runs it: what :func:`~sbert_nonling.app.train_recipe`, ``sbert-nonling
    train`` and ``reproduce`` need to know of it. Its name is its config's ``method``, the ``"method"`` of its recipes;
    the paper's reported values belong to each recipe (its ``"paper"`` block), the resume policy and the tiny defaults
    to the config (``resumable``, ``tiny_defaults``).

    Args:
        config: the method's config class, a :class:`~sbert_nonling.configs.MethodConfig` subclass whose ``method``
            names it.
        builder: its builder (``builder(config, data)`` -> ``MethodPlan``), or the builder's import path,
            ``"package.module:function"``, imported on first use (a config module stays free of torch).
        training_sources: the :class:`~sbert_nonling.data.DataSources` fields a run of the method can train on, in the
            order its model cards list them (:meth:`~sbert_nonling.configs.MethodConfig.trains_on` leaves out those a
            run's settings switch off); the command line names the methods of each data option from them.

    Example::

        from sbert_nonling.configs import MethodSpec, SimCSEConfig, get_method

        spec = get_method("simcse")
        print(spec.config is SimCSEConfig, spec.builder)  # True sbert_nonling.methods.simcse:build_simcse
        print(spec.training_sources)  # ('text_file', 'nli_file')
    """

    config: type[MethodConfig]
    builder: Builder | str
    training_sources: tuple[str, ...]

    def __post_init__(self) -> None:
        if not (isinstance(self.config, type) and issubclass(self.config, MethodConfig) and self.config.method):
            raise ValueError(
                f"MethodSpec config {self.config!r} must be a MethodConfig subclass whose 'method' class attribute "
                "names the method."
            )
        if isinstance(self.builder, str) and not self.builder.partition(":")[2]:
            raise ValueError(
                f"MethodSpec builder {self.builder!r} of method {self.name!r} must be a function or its import path, "
                "'package.module:function'."
            )

    @property
    def name(self) -> str:
        """The method's name: its config's ``method``."""
        return self.config.method


#: The registered methods by name.
_METHODS: dict[str, MethodSpec] = {}
#: The entry points already imported (``name = value`` lines of their distributions).
_LOADED_ENTRY_POINTS: set[str] = set()


def register_method(spec: MethodSpec) -> MethodSpec:
    """Register a method under its name (``spec.config.method``), so that recipes naming it load its config and runs
    build its plan; returns ``spec``. Registering the same spec again changes nothing; another spec under a registered
    name raises a ValueError naming both configs.

    Args:
        spec: the method's config, builder and training data sources.

    Example::

        from dataclasses import dataclass
        from typing import ClassVar

        from sbert_nonling.configs import MethodSpec, SimCSEConfig, get_method, register_method


        @dataclass
        class ColdSimCSEConfig(SimCSEConfig):
            method: ClassVar[str] = "cold-simcse"  # a SimCSE run under its own name


        register_method(MethodSpec(ColdSimCSEConfig, "sbert_nonling.methods.simcse:build_simcse", ("text_file",)))
        print(get_method("cold-simcse").config.__name__)  # ColdSimCSEConfig
    """
    registered = _METHODS.get(spec.name)
    if registered is not None and registered != spec:
        raise ValueError(
            f"Method {spec.name!r} is already registered with config {_qualified(registered.config)}; "
            f"{_qualified(spec.config)} must name another method."
        )
    _METHODS[spec.name] = spec
    return spec


def get_method(name: str) -> MethodSpec:
    """The registration of method ``name``: the bundled methods' and those registered so far, then those the entry
    points of :data:`ENTRY_POINT_GROUP` register. An unknown name raises a ValueError listing the methods.

    Args:
        name: the method's name, e.g. ``"simcse"`` (a recipe's ``"method"``).
    """
    _import_bundled_configs()
    if name not in _METHODS:
        _import_entry_points()
    if name not in _METHODS:
        raise ValueError(
            f"method {name!r} is not one of {list_methods()}: a method of your own is registered by register_method "
            f'in a module that the recipe\'s "import" key names, or that an entry point of the group '
            f"{ENTRY_POINT_GROUP!r} names."
        )
    return _METHODS[name]


def list_methods() -> list[str]:
    """The names of every registered method, sorted: the bundled ones and those of the installed entry points.

    Example::

        from sbert_nonling.configs import list_methods

        print(list_methods())  # ['audiocse', 'dalr', 'kdmcse', 'macd', 'mcse', 'multitask', 'pixel_linguist', ...]
    """
    _import_bundled_configs()
    _import_entry_points()
    return sorted(_METHODS)


class MethodTable(Mapping[str, T]):
    """A read-only view of the registry: method name -> one part of its registration, always current (a method
    registered later is in it).

    Args:
        part: reads the part from a registration, e.g. its config class.
    """

    def __init__(self, part: Callable[[MethodSpec], T]) -> None:
        self.part = part

    def __getitem__(self, name: str) -> T:
        try:
            spec = get_method(name)
        except ValueError:
            raise KeyError(name) from None
        return self.part(spec)

    def __iter__(self) -> Iterator[str]:
        return iter(list_methods())

    def __len__(self) -> int:
        return len(list_methods())


@functools.cache
def _import_bundled_configs() -> None:
    """Import every module of this package: each bundled method registers where its config is declared."""
    package = importlib.import_module(__package__)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")


def _import_entry_points() -> None:
    """Import the modules the entry points of :data:`ENTRY_POINT_GROUP` name (each once); one that cannot be imported
    raises a ValueError naming it."""
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        line = f"{entry_point.name} = {entry_point.value}"
        if line in _LOADED_ENTRY_POINTS:
            continue
        try:
            entry_point.load()
        except ImportError as error:
            raise ValueError(
                f"The method entry point '{line}' (group {ENTRY_POINT_GROUP!r}) cannot be imported: {error}. "
                "Install its distribution again, or uninstall it."
            ) from error
        _LOADED_ENTRY_POINTS.add(line)


def _qualified(config: type) -> str:
    return f"{config.__module__}.{config.__qualname__}"
