"""A release that installs: ``python -m build`` makes an sdist and a wheel (the wheel built from the sdist, so the
sdist is complete); the wheel, installed into a fresh virtual environment, imports, runs its console script and
trains a tiny recipe offline from a folder outside the repository.

The fresh environment gets no network: it sees the dependencies already installed for the tests (this interpreter's
site-packages, through a ``.pth`` file that lists those folders) but not this repository's editable install, whose
``__editable__*`` hooks live in ``.pth`` files of that site-packages and run only for a folder processed as a site
folder: a folder merely listed in a ``.pth`` file is added to ``sys.path`` without its own ``.pth`` files being read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import SHARED_DIR, wiki_file

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    process = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    assert process.returncode == 0, (
        f"{command} failed ({process.returncode}):\n{process.stdout[-3000:]}\n{process.stderr[-6000:]}"
    )
    return process


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> tuple[Path, Path]:
    """(wheel, sdist) built from the working tree with the test interpreter's setuptools (no isolation: no
    download)."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], cwd=out)
    (wheel,) = out.glob("sbert_nonling-*.whl")
    (sdist,) = out.glob("sbert_nonling-*.tar.gz")
    return wheel, sdist


def test_the_wheel_ships_the_recipes_and_the_type_marker(dist):
    wheel, _ = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    recipes = {name for name in names if name.startswith("sbert_nonling/recipes/") and name.endswith(".json")}
    assert {
        f"sbert_nonling/recipes/{path.name}" for path in (ROOT / "sbert_nonling" / "recipes").glob("*.json")
    } == recipes
    assert "sbert_nonling/recipes/simcse-unsup.json" in recipes
    assert {
        "sbert_nonling/py.typed",
        "sbert_nonling/losses/references.bib",
    } <= names  # the losses' citations read the .bib
    assert not any(name.startswith("tests/") for name in names)
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "sbert-nonling = sbert_nonling.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_sdist_ships_the_recipes_and_the_type_marker(dist):
    _, sdist = dist
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    recipes = {name for name in names if name.startswith("sbert_nonling/recipes/") and name.endswith(".json")}
    assert {
        f"sbert_nonling/recipes/{path.name}" for path in (ROOT / "sbert_nonling" / "recipes").glob("*.json")
    } == recipes
    assert {
        "sbert_nonling/py.typed",
        "sbert_nonling/losses/references.bib",
        "setup.cfg",
        "setup.py",
        "README.md",
    } <= names


def test_the_installed_wheel_imports_runs_its_command_and_trains_offline(dist, tmp_path, data_dir):
    wheel, _ = dist
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    scripts = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"]).stdout.strip())
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    # The test interpreter's package folders, listed (not processed as site folders: no __editable__ hook of this
    # repository runs, and its source folder is not on the new environment's path).
    folders = dict.fromkeys(sysconfig.get_path(key) for key in ("purelib", "platlib"))
    (site / "test-dependencies.pth").write_text("".join(f"{folder}\n" for folder in folders), encoding="utf-8")

    # The new environment has no pip of its own: the test interpreter's pip installs into it, from the wheel only
    # (--ignore-installed: the editable install the listed folders show is neither a reason to skip nor uninstalled).
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    run([*pip, "install", "--no-deps", "--no-index", "--ignore-installed", "--no-compile", str(wheel)])

    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(
        HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_DISABLED="true", SBERT_NONLING_SHARED=str(SHARED_DIR)
    )
    where = run(
        [str(python), "-c", "import sbert_nonling; print(sbert_nonling.__file__)"], cwd=cwd, env=env
    ).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where

    command = scripts / ("sbert-nonling.exe" if os.name == "nt" else "sbert-nonling")
    assert "train" in run([str(command), "--help"], cwd=cwd, env=env).stdout

    text_file = wiki_file(tmp_path / "wiki.txt", 200)
    output = tmp_path / "run"
    argv = [
        "train",
        "simcse-unsup",
        "--tiny",
        "--max-steps",
        "2",
        "--text-file",
        str(text_file),
        "--output",
        str(output),
    ]
    run([str(command), *argv], cwd=cwd, env=env)
    assert (output / "model").is_dir()
