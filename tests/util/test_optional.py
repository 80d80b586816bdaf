"""Optional extras: with Pango / Cairo bindings, matplotlib and mteb unimportable, the package imports, trains the tiny
VisualCSE recipe, exports and evaluates; the pixel route, the plots and the MTEB runner raise ImportErrors naming
their pip extra (and, for Pango, the system packages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sbert_nonling.util.optional import EXTRAS, missing_extra_message, require_extra
from tests.conftest import wiki_file

BLOCKED = ("pangocffi", "pangocairocffi", "cairocffi", "matplotlib", "mteb")
# Run in a fresh interpreter: a meta-path finder makes every BLOCKED package fail to import, as on a machine where they
# (or the native libraries they load) are not installed.
SCRIPT = """
import contextlib, importlib.abc, io, json, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, Blocker())

import sbert_nonling
loaded_at_import = sorted(name for name in sys.modules if name.split(".")[0] in {blocked!r})

from sentence_transformers import SentenceTransformer
from sbert_nonling.evaluation import evaluate_sts_dir
from sbert_nonling.app import train_recipe
from sbert_nonling.data import DataSources

result = train_recipe(
    "visualcse",
    {output!r},
    DataSources(text_file={text_file!r}, sts_dir={sts_dir!r}, image_dir={image_dir!r}),
    tiny=True,
    max_steps=2,
    overrides={{"eval_steps": 2, "batch_size": 16, "modality_batch_size": 8, "images_per_class": 2}},
)
export_scores = evaluate_sts_dir(SentenceTransformer(result["export"]), {sts_dir!r})

errors = {{}}
def record(name, action):
    try:
        action()
    except ImportError as error:
        errors[name] = str(error)

record("pixel_renderer", lambda: sbert_nonling.PixelRenderer())
cli_stderr = io.StringIO()
with contextlib.redirect_stderr(cli_stderr):  # the CLI prints a missing extra as a one-line error, exit status 2
    cli_status = __import__("sbert_nonling.cli", fromlist=["main"]).main(["render", "Hi", "-o", "hi.png"])
errors["cli_render"] = f"exit {{cli_status}}: {{cli_stderr.getvalue()}}"
record("plots", lambda: __import__("sbert_nonling.evaluation.plots"))
record("mteb", lambda: __import__("sbert_nonling.evaluation.mteb_runner"))
print(json.dumps({{
    "loaded_at_import": loaded_at_import,
    "loaded_at_end": sorted(name for name in sys.modules if name.split(".")[0] in {blocked!r}),
    "global_step": result["global_step"],
    "dev_after": result["dev_after"],
    "export_scores": export_scores,
    "errors": errors,
}}))
"""


@pytest.mark.slow
def test_core_package_trains_exports_and_evaluates_without_the_extras(tmp_path, data_dir, small_sts_dir):
    text_file = wiki_file(tmp_path / "wiki.txt", 200)
    script = SCRIPT.format(
        blocked=BLOCKED,
        output=str(tmp_path / "run"),
        text_file=str(text_file),
        sts_dir=str(small_sts_dir),
        image_dir=str(data_dir / "images" / "cifar10" / "train"),
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_DISABLED": "true"}
    process = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert process.returncode == 0, process.stderr[-4000:]
    report = json.loads(process.stdout.strip().splitlines()[-1])

    assert report["loaded_at_import"] == [] and report["loaded_at_end"] == []
    assert report["global_step"] == 2
    assert set(report["dev_after"]) == set(report["export_scores"]) == {"STSBenchmark", "SICK-R", "avg"}
    # The plain export reproduces the trained model's dev scores (its selected checkpoint).
    assert report["export_scores"] == pytest.approx(report["dev_after"], abs=1e-6)
    errors = report["errors"]
    assert set(errors) == {"pixel_renderer", "cli_render", "plots", "mteb"}
    assert errors["cli_render"].startswith("exit 2: sbert-nonling render: error: ")
    for name in ("pixel_renderer", "cli_render"):
        assert "pip install 'sbert-nonling[pixel]'" in errors[name]
        assert "apt-get install libpango-1.0-0 libpangocairo-1.0-0" in errors[name]
        assert "blocked by the test" in errors[name]  # the underlying failure is kept in the message
    assert "pip install 'sbert-nonling[plots]'" in errors["plots"] and "apt-get" not in errors["plots"]
    assert "pip install 'sbert-nonling[mteb]'" in errors["mteb"]


def test_require_extra_returns_the_modules_when_installed():
    modules = require_extra("plots", "Plots")
    assert [module.__name__ for module in modules] == ["matplotlib"]


def test_missing_native_library_counts_as_a_missing_extra(monkeypatch, tmp_path):
    """A binding that is installed but cannot load its system library raises OSError on import (cffi's dlopen): the
    message still names the extra and the system packages."""
    (tmp_path / "binding_without_library.py").write_text(
        "raise OSError(\"cannot load library 'libpango-1.0.so.0': no such file\")\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(EXTRAS, "pixel", ("pixel", ("binding_without_library",), EXTRAS["pixel"][2]))
    with pytest.raises(
        ImportError, match=r"^Rendering needs the optional dependencies of sbert-nonling\[pixel\]"
    ) as caught:
        require_extra("pixel", "Rendering")
    assert "cannot load library 'libpango-1.0.so.0'" in str(caught.value)
    assert "apt-get install libpango-1.0-0" in str(caught.value)
    assert isinstance(caught.value.__cause__, OSError)
    assert missing_extra_message("mteb", "MTEB", ImportError("x")).endswith("pip install 'sbert-nonling[mteb]'.")
