"""Publish a saved model folder (text export, full multimodal model or pixel model) to the Hugging Face Hub."""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import HfApi


def push_to_hub(
    folder: str | Path,
    repo_id: str,
    token: str | None = None,
    private: bool = False,
    commit_message: str = "Upload sentence encoder trained with sbert-nonling",
    endpoint: str | None = None,
) -> str:
    """Create ``repo_id`` (if needed) and upload ``folder``, a saved model with its model card, exactly as saved (no
    reload, unlike ``SentenceTransformer.push_to_hub``); returns the commit URL. A ValueError if ``folder`` is not a
    saved model with a card.

    Args:
        folder: the saved model folder (``OUT/model``, ``OUT/export``).
        repo_id: ``user/name`` or ``org/name`` on the Hub.
        token: a Hub token with write access; default: the one ``hf auth login`` stored.
        private: create the repository as private.
        commit_message: the commit's summary.
        endpoint: another Hub endpoint (a mirror); default: the Hugging Face Hub.

    Example::

        from sbert_nonling.export.publish import push_to_hub
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder

        encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)  # offline; e.g. "bert-base-uncased"
        build_sentence_model(str(encoder)).save("export")  # modules.json + the README.md card it checks for
        # push_to_hub("export", "me/visualcse-bert-base")  # needs the Hub and a write token; returns the commit URL
    """
    folder = Path(folder)
    if not (folder / "modules.json").is_file():
        raise ValueError(f"{str(folder)!r} is not a saved sentence-transformers model (no modules.json).")
    if not (folder / "README.md").is_file():
        raise ValueError(f"{str(folder)!r} has no README.md model card; write one with write_model_card first.")
    try:
        json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{str(folder / 'modules.json')!r} is not valid JSON ({error}); re-save the model.") from None
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, commit_message=commit_message)
    return str(commit)
