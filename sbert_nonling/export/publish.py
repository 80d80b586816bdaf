"""Publish a saved model folder (text export, full multimodal model or pixel model) to the Hugging Face Hub, or write
the exact upload to a local folder (a dry run)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from httpx2 import HTTPError
from huggingface_hub import HfApi
from huggingface_hub.errors import OfflineModeIsEnabled
from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects, validate_repo_id

from sbert_nonling.export.model_card import card_for_repo
from sbert_nonling.util.unreachable import error_summary
from sbert_nonling.util.validation import check_dry_run_target


def _upload_files(folder: Path) -> list[str]:
    """The files of ``folder`` an upload sends (relative POSIX paths; not ``.git`` / ``.cache/huggingface``, as
    ``HfApi.upload_folder`` leaves them out)."""
    paths = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    return list(filter_repo_objects(paths, ignore_patterns=DEFAULT_IGNORE_PATTERNS))


def _stage(folder: Path, card: str, target: Path, place: Callable[[Path, Path], object]) -> None:
    """Lay out the upload in ``target``: each file of ``folder`` placed by ``place(source, destination)`` (a copy or a
    link), README.md the published ``card``."""
    for name in _upload_files(folder):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if name == "README.md":
            destination.write_text(card, encoding="utf-8")
        else:
            place((folder / name).resolve(), destination)


def _unreachable(folder: Path, repo_id: str, error: Exception) -> ValueError:
    """The one-line error of an upload that could not reach the Hub (offline, no network, no write access)."""
    if isinstance(error, OfflineModeIsEnabled):
        reason = "offline mode is on (HF_HUB_OFFLINE=1); unset HF_HUB_OFFLINE on a machine that reaches the Hub"
    else:
        reason = (
            f"{error_summary(error)}; check the network, and that your token (`hf auth login`, or --token) may write "
            "to it"
        )
    return ValueError(
        f"Could not upload {str(folder)!r} to the Hub repository {repo_id!r}: {reason}, or write the exact upload to "
        "a folder without uploading (push --dry-run DIR, dry_run=DIR)."
    )


def push_to_hub(
    folder: str | Path,
    repo_id: str,
    token: str | None = None,
    private: bool = False,
    commit_message: str = "Upload sentence encoder trained with sbert-nonling",
    endpoint: str | None = None,
    dry_run: str | Path | None = None,
) -> str:
    """Create ``repo_id`` (if needed) and upload ``folder``, a saved model with its model card, as saved (no reload,
    unlike ``SentenceTransformer.push_to_hub``), its card published for ``repo_id``
    (:func:`~sbert_nonling.export.model_card.card_for_repo`: the loading code loads ``repo_id``); returns the commit
    URL. With ``dry_run``, write that exact upload (every file, the published card) into the new folder ``dry_run``
    instead, upload nothing and return its path.

    A ValueError if ``folder`` is not a saved model with a card, if ``dry_run`` already holds files, or, in one line
    naming the repository and the way out, if the Hub cannot be reached (offline, no network, no write access).

    Args:
        folder: the saved model folder (``OUT/model``, ``OUT/export``).
        repo_id: ``user/name`` or ``org/name`` on the Hub.
        token: a Hub token with write access; default: the one ``hf auth login`` stored.
        private: create the repository as private.
        commit_message: the commit's summary.
        endpoint: another Hub endpoint (a mirror); default: the Hugging Face Hub.
        dry_run: a new (or empty) folder to write the upload to, instead of uploading.

    Example::

        from sbert_nonling.export.publish import push_to_hub
        from sbert_nonling.models import build_sentence_model, build_tiny_encoder

        # offline: a tiny random encoder; e.g. "bert-base-uncased"
        encoder = build_tiny_encoder("tiny-bert", ["A man is playing a guitar."], hidden_size=32)
        build_sentence_model(str(encoder)).save("export")  # modules.json + the README.md card it checks for
        print(push_to_hub("export", "me/visualcse-bert-base", dry_run="upload"))  # offline: the files, nothing sent
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
    validate_repo_id(repo_id)  # an HFValidationError (a ValueError) names what is wrong with it
    card = card_for_repo((folder / "README.md").read_text(encoding="utf-8"), repo_id)
    if dry_run is not None:
        target = check_dry_run_target(dry_run)
        _stage(folder, card, target, shutil.copy2)
        return str(target)
    with tempfile.TemporaryDirectory(prefix="sbert-nonling-push-") as staging:
        _stage(folder, card, Path(staging), os.symlink)  # the weights are linked, not copied
        api = HfApi(endpoint=endpoint, token=token)
        try:
            api.create_repo(repo_id, private=private, exist_ok=True)
            commit = api.upload_folder(folder_path=staging, repo_id=repo_id, commit_message=commit_message)
        except (OSError, HTTPError) as error:
            raise _unreachable(folder, repo_id, error) from error
    return str(commit)
