from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sbert_nonling import export_text_model
from sbert_nonling.models import build_sentence_model

SENTENCES = ["A man is playing a guitar.", "A woman slices an onion.", "Two dogs run through a field."]
# Load the export where importing sbert_nonling is impossible and without trust_remote_code.
LOAD_WITHOUT_PACKAGE = """
import sys
sys.modules["sbert_nonling"] = None
import numpy as np
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1])
np.save(sys.argv[2], model.encode(sys.argv[3:]))
"""


@pytest.mark.parametrize("pooling", ["cls", "cls_mlp", "mean"])
def test_export_loads_with_plain_sentence_transformers_and_encodes_the_same(tiny_encoder_dir, tmp_path, pooling):
    model = build_sentence_model(tiny_encoder_dir, pooling=pooling, max_seq_length=16)
    expected = model.encode(SENTENCES)
    export_dir = export_text_model(model, tmp_path / "export")
    modules = json.loads((export_dir / "modules.json").read_text())
    assert all(module["type"].startswith("sentence_transformers.") for module in modules)
    assert "requirements" not in json.loads((export_dir / "config_sentence_transformers.json").read_text())
    output = tmp_path / "embeddings.npy"
    subprocess.run([sys.executable, "-c", LOAD_WITHOUT_PACKAGE, str(export_dir), str(output), *SENTENCES], check=True)
    np.testing.assert_allclose(np.load(output), expected, atol=1e-6, rtol=0)
    assert SentenceTransformer(str(export_dir)).max_seq_length == 16


def test_export_rejects_what_a_plain_checkpoint_cannot_hold(tiny_model, tmp_path):
    from sentence_transformers.base.modules import InputModule

    class Custom(InputModule):  # a non-built-in module after the encoder
        def forward(self, features, **kwargs):
            return features

        def save(self, *args, **kwargs):
            pass

    tiny_model.append(Custom())
    with pytest.raises(ValueError, match="not a built-in sentence-transformers module"):
        export_text_model(tiny_model, tmp_path / "export")


def test_export_refuses_a_file_or_a_non_empty_folder_unless_overwrite(tiny_model, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(ValueError, match=r"Export target '.*a-file' is a file, not a folder; choose a folder"):
        export_text_model(tiny_model, tmp_path / "a-file")
    first = export_text_model(tiny_model, tmp_path / "export")
    (first / "stale.txt").write_text("left by an earlier export")
    weights = {path.name: path.read_bytes() for path in first.rglob("*.safetensors")}
    with pytest.raises(ValueError, match=r"Export folder '.*export' is not empty; .*--overwrite \(overwrite=True\)"):
        export_text_model(tiny_model, first)
    assert (first / "stale.txt").is_file()  # refused: untouched
    (tmp_path / "empty").mkdir()
    assert (
        export_text_model(tiny_model, tmp_path / "empty") == tmp_path / "empty"
    )  # an empty folder is no export to lose
    assert export_text_model(tiny_model, first, overwrite=True) == first
    assert (
        not (first / "stale.txt").exists()
        and {path.name: path.read_bytes() for path in first.rglob("*.safetensors")} == weights
    )
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []  # no staging folder left


def test_the_export_s_card_keeps_the_widget_datasets_tags_and_citations_training_recorded(tiny_model, tmp_path):
    from sbert_nonling import SimCSELoss

    tiny_model.model_card_data.widget = [{"source_sentence": "A cat sleeps.", "sentences": ["A dog runs."]}]
    tiny_model.model_card_data.set_losses([SimCSELoss(tiny_model)])  # as sentence-transformers' trainer records them
    export_text_model(tiny_model, tmp_path / "export")
    card = (tmp_path / "export" / "README.md").read_text(encoding="utf-8")
    assert "source_sentence: A cat sleeps." in card and "- A dog runs." in card and "- loss:SimCSELoss" in card
    assert "#### SimCSELoss" in card and "@inproceedings{gao2021simcse," in card  # the loss's paper, ST's section
    reloaded = SentenceTransformer(str(tmp_path / "export"))
    assert reloaded.encode(["A cat sleeps."]).shape == tiny_model.encode(["A cat sleeps."]).shape
