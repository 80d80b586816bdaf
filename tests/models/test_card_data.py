"""PackageModelCardData: the README sentence-transformers writes on save loads the model the way that works — the full
model with the package and trust_remote_code=True, the text export plainly."""

from __future__ import annotations

import re

from sentence_transformers import SentenceTransformer

from sbert_nonling import ImagePatchEmbed, export_text_model
from sbert_nonling.models import build_sentence_model
from sbert_nonling.models.card_data import INSTALL_LINE, PackageModelCardData


def loading_lines(readme: str) -> list[str]:
    return re.findall(r"^model = SentenceTransformer\(.*$", readme, flags=re.MULTILINE)


def test_a_saved_full_model_s_card_needs_the_package_and_an_export_s_card_does_not(tiny_encoder_dir, tmp_path):
    model = build_sentence_model(tiny_encoder_dir, front_ends={"image": ImagePatchEmbed(img_size=16, patch_size=8, embedding_dimension=32)})
    assert isinstance(model.model_card_data, PackageModelCardData)
    model.model_card_data.model_id = "me/visualcse-tiny"
    model.save(str(tmp_path / "full"))
    full = (tmp_path / "full" / "README.md").read_text(encoding="utf-8")
    assert loading_lines(full) == ['model = SentenceTransformer("me/visualcse-tiny", trust_remote_code=True)']
    assert INSTALL_LINE in full
    SentenceTransformer(str(tmp_path / "full"), trust_remote_code=True)  # the line works (locally)

    export_text_model(model, tmp_path / "export")
    plain = (tmp_path / "export" / "README.md").read_text(encoding="utf-8")
    assert all("trust_remote_code" not in line for line in loading_lines(plain)) and loading_lines(plain)
    assert INSTALL_LINE not in plain
