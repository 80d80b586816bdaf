"""The method registry: every bundled method registered where its config is declared, a method of one's own registered
by a call or an entry point, the views METHOD_CONFIGS / BUILDERS, and each mistake refused in one sentence."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import ClassVar

import pytest

from sbert_nonling.configs import (
    ENTRY_POINT_GROUP,
    METHOD_CONFIGS,
    MethodConfig,
    MethodSpec,
    SimCSEConfig,
    get_method,
    list_methods,
    register_method,
    registry,
)

#: The bundled methods whose registrations this file checks (each method's own test file checks its own).
BUNDLED = ("audiocse", "kdmcse", "macd", "mcse", "multitask", "pixel_linguist", "simcse", "visualcse")


@pytest.fixture
def own_registry(monkeypatch):
    """The registry as it is, given back as it was after the test (its registrations and imported entry points)."""
    list_methods()
    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    monkeypatch.setattr(registry, "_LOADED_ENTRY_POINTS", set(registry._LOADED_ENTRY_POINTS))


@dataclass
class TinyTemperatureConfig(SimCSEConfig):
    """SimCSE under a name of its own (the method these tests register)."""

    method: ClassVar[str] = "tiny-temperature"


def test_every_bundled_method_is_registered_beside_its_config_with_a_builder_it_imports_on_use():
    from sbert_nonling.methods import BUILDERS, load_builder

    assert set(BUNDLED) <= set(list_methods())
    for name in BUNDLED:
        spec = get_method(name)
        assert spec.name == spec.config.method == name and METHOD_CONFIGS[name] is spec.config
        assert spec.config.__module__ == f"sbert_nonling.configs.{name}"  # registered where its config is declared
        assert isinstance(spec.builder, str) and callable(load_builder(spec)) and BUILDERS[name] is load_builder(spec)
    assert get_method("visualcse").training_sources == ("text_file", "nli_file", "image_dir")


def test_the_registry_and_the_bundled_registrations_import_no_torch():
    script = (
        "import sys\n"
        "from sbert_nonling.configs import get_method, list_methods\n"
        "print([get_method(name).config.__name__ for name in list_methods()][:1])\n"
        "print([name for name in ('torch', 'transformers', 'datasets') if name in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.splitlines()[-1] == "[]"


def test_a_method_of_one_s_own_is_registered_once_and_seen_by_every_view(own_registry):
    from sbert_nonling.methods import BUILDERS, build_simcse

    spec = MethodSpec(TinyTemperatureConfig, build_simcse, ("text_file",))
    assert register_method(spec) is spec and register_method(spec) is spec  # again: nothing changes
    assert get_method("tiny-temperature") is spec and "tiny-temperature" in list_methods()
    assert METHOD_CONFIGS["tiny-temperature"] is TinyTemperatureConfig and BUILDERS["tiny-temperature"] is build_simcse

    @dataclass
    class OtherConfig(SimCSEConfig):
        method: ClassVar[str] = "tiny-temperature"

    with pytest.raises(
        ValueError,
        match=r"Method 'tiny-temperature' is already registered with config tests\.configs\.test_registry\."
        r"TinyTemperatureConfig; tests\.configs\.test_registry\..*OtherConfig must name another method\.",
    ):
        register_method(MethodSpec(OtherConfig, build_simcse, ("text_file",)))


def test_an_unknown_method_is_refused_listing_the_registered_ones_and_how_to_add_one():
    with pytest.raises(ValueError) as refused:
        get_method("simcse2")
    assert str(refused.value).startswith("method 'simcse2' is not one of ['audiocse', ")
    assert f"entry point of the group {ENTRY_POINT_GROUP!r}" in str(refused.value)
    assert "simcse2" not in METHOD_CONFIGS and len(METHOD_CONFIGS) == len(list_methods())
    with pytest.raises(KeyError):
        METHOD_CONFIGS["simcse2"]


def test_a_registration_names_a_config_class_with_a_method_and_a_builder_or_its_import_path():
    with pytest.raises(ValueError, match=r"MethodSpec config .*SimCSEConfig.* must be a MethodConfig subclass"):
        MethodSpec(SimCSEConfig(), "sbert_nonling.methods.simcse:build_simcse", ("text_file",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"whose 'method' class attribute names the method"):
        MethodSpec(MethodConfig, "sbert_nonling.methods.simcse:build_simcse", ("text_file",))
    with pytest.raises(ValueError, match=r"builder 'sbert_nonling.methods.simcse' of method 'tiny-temperature' must"):
        MethodSpec(TinyTemperatureConfig, "sbert_nonling.methods.simcse", ("text_file",))


def test_a_builder_path_that_cannot_be_imported_is_named():
    from sbert_nonling.methods import load_builder

    spec = MethodSpec(TinyTemperatureConfig, "sbert_nonling.methods.simcse:build_simcsee", ("text_file",))
    with pytest.raises(
        ValueError, match=r"The builder 'sbert_nonling.methods.simcse:build_simcsee' of method 'tiny-temperature'"
    ):
        load_builder(spec)


def _plant_distribution(folder, entry_points: str) -> None:
    """An installed distribution in ``folder`` (put on sys.path) whose entry points are ``entry_points``."""
    info = folder / "planted_methods-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-methods\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_points}\n", encoding="utf-8")


def test_an_installed_entry_point_registers_its_method_on_first_lookup(own_registry, tmp_path, monkeypatch):
    (tmp_path / "planted_entry_point.py").write_text(
        textwrap.dedent(
            """
            from dataclasses import dataclass
            from typing import ClassVar

            from sbert_nonling.configs import MethodSpec, SimCSEConfig, register_method


            @dataclass
            class EntryPointConfig(SimCSEConfig):
                method: ClassVar[str] = "entry-point-simcse"


            register_method(MethodSpec(EntryPointConfig, "sbert_nonling.methods.simcse:build_simcse", ("text_file",)))
            """
        ),
        encoding="utf-8",
    )
    _plant_distribution(tmp_path, "entry-point-simcse = planted_entry_point")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert get_method("entry-point-simcse").config.__name__ == "EntryPointConfig"
    assert "entry-point-simcse" in list_methods()


def test_an_entry_point_that_cannot_be_imported_is_named(own_registry, tmp_path, monkeypatch):
    _plant_distribution(tmp_path, "broken = planted_missing_module")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ValueError,
        match=rf"The method entry point 'broken = planted_missing_module' \(group '{ENTRY_POINT_GROUP}'\) cannot be "
        r"imported: No module named 'planted_missing_module'",
    ):
        list_methods()
