"""push_to_hub against a local HTTP server speaking the Hub's upload API: the Hub itself is unreachable here, so the
calls are intercepted at the HTTP layer (nothing in huggingface_hub is mocked); a dry run; and real ``sbert-nonling
push`` processes offline and against an endpoint nothing listens on."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sbert_nonling import export_text_model
from sbert_nonling.app import get_recipe
from sbert_nonling.export.model_card import card_for_repo, write_model_card
from sbert_nonling.export.publish import push_to_hub
from tests.conftest import cli_environment


class FakeHub(BaseHTTPRequestHandler):
    """Answers repo creation, card-metadata validation, pre-upload (every file "regular", sent inline) and commit;
    records what was created, validated and uploaded."""

    uploads: dict[str, bytes] = {}
    created: list[dict] = []
    validated: list[dict] = []

    def _reply(self, content: dict) -> None:
        body = json.dumps(content).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        base = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/api/repos/create":
            request = json.loads(body)
            FakeHub.created.append(request)
            return self._reply({"url": f"{base}/{request['organization']}/{request['name']}"})
        if "/preupload/" in self.path:
            files = json.loads(body)["files"]
            return self._reply(
                {"files": [{"path": item["path"], "uploadMode": "regular", "shouldIgnore": False} for item in files]}
            )
        if "/commit/" in self.path:
            for line in body.decode().splitlines():
                entry = json.loads(line)
                if entry["key"] == "file":
                    FakeHub.uploads[entry["value"]["path"]] = base64.b64decode(entry["value"]["content"])
            repository = self.path.split("/api/models/")[1].split("/commit/")[0]
            return self._reply({"commitUrl": f"{base}/{repository}/commit/{'0' * 40}", "commitOid": "0" * 40})
        if self.path == "/api/validate-yaml":  # huggingface_hub has the card's YAML metadata checked
            FakeHub.validated.append(json.loads(body))
            return self._reply({})
        self.send_error(404)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def hub(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(
        huggingface_hub.constants, "HF_HUB_OFFLINE", False
    )  # the test suite runs with HF_HUB_OFFLINE=1
    FakeHub.uploads, FakeHub.created, FakeHub.validated = {}, [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _files(folder) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.mark.parametrize("form", ["text", "full"])
def test_both_forms_upload_every_file_with_the_card(tiny_model, tmp_path, hub, form):
    folder = tmp_path / form
    if form == "text":
        export_text_model(tiny_model, folder)
    else:
        tiny_model.save(str(folder))
    write_model_card(folder, get_recipe("simcse-unsup"), form, name=str(folder))
    url = push_to_hub(folder, f"me/tiny-{form}", token="hf_test", private=True, endpoint=hub)
    assert url.endswith("/commit/" + "0" * 40)
    assert FakeHub.created == [{"name": f"tiny-{form}", "organization": "me", "visibility": "private"}]
    saved = _files(folder)
    card = card_for_repo(saved.pop("README.md").decode(), f"me/tiny-{form}")
    assert FakeHub.uploads == {**saved, "README.md": card.encode()}  # the exact file set and bytes, the card published
    assert f'SentenceTransformer("me/tiny-{form}"' in card and str(folder) not in card and len(FakeHub.validated) == 1


def test_a_dry_run_writes_the_exact_upload_and_sends_nothing(tiny_model, tmp_path, hub):
    folder = tmp_path / "export"
    export_text_model(tiny_model, folder)
    write_model_card(folder, get_recipe("simcse-unsup"), "text", name=str(folder))  # a run's card loads its folder
    assert push_to_hub(folder, "me/encoder", dry_run=tmp_path / "upload") == str(tmp_path / "upload")
    assert FakeHub.created == [] and FakeHub.uploads == {} and FakeHub.validated == []
    written, saved = _files(tmp_path / "upload"), _files(folder)
    assert set(written) == set(saved) and all(written[name] == saved[name] for name in saved if name != "README.md")
    assert (
        'model = SentenceTransformer("me/encoder")' in written["README.md"].decode()
        and str(folder) not in written["README.md"].decode()
    )
    push_to_hub(folder, "me/encoder", token="hf_test", endpoint=hub)
    assert FakeHub.uploads == written  # what the dry run wrote is what an upload sends
    with pytest.raises(ValueError, match="dry-run folder .*upload' already holds files"):
        push_to_hub(folder, "me/encoder", dry_run=tmp_path / "upload")


def _push(folder, *arguments: str, **environment: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "sbert_nonling.cli", "push", str(folder), *arguments]
    return subprocess.run(
        command, capture_output=True, text=True, env={**cli_environment(), **environment}, timeout=300
    )


def test_push_from_the_command_line_offline_or_unreachable_is_one_sentence_and_a_dry_run_works(tiny_model, tmp_path):
    folder = tmp_path / "export"
    export_text_model(tiny_model, folder)
    write_model_card(folder, get_recipe("simcse-unsup"), "text", name=str(folder))
    offline = _push(folder, "me/name")  # HF_HUB_OFFLINE=1, as the whole suite runs
    with socket.socket() as probe:  # a local port nothing listens on: the request is refused, no network is used
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"
    unreachable = _push(folder, "me/name", "--token", "hf_test", HF_HUB_OFFLINE="0", HF_ENDPOINT=endpoint)
    for run, reason in ((offline, "offline mode is on (HF_HUB_OFFLINE=1)"), (unreachable, "ConnectError")):
        assert run.returncode == 2 and "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, (
            run.stderr
        )
        assert (
            f"Could not upload '{folder}' to the Hub repository 'me/name': {reason}" in run.stderr
            and "push --dry-run DIR" in run.stderr
        )
    dry = _push(folder, "me/name", "--dry-run", str(tmp_path / "upload"))
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout.splitlines()[-1]) == {"repo_id": "me/name", "dry_run": str(tmp_path / "upload")}
    assert 'SentenceTransformer("me/name")' in (tmp_path / "upload" / "README.md").read_text()


def test_folders_that_are_not_models_are_refused_before_any_request(tmp_path, hub):
    with pytest.raises(ValueError, match="no modules.json"):
        push_to_hub(tmp_path, "me/nothing", token="hf_test", endpoint=hub)
    (tmp_path / "modules.json").write_text("[]")
    with pytest.raises(ValueError, match="no README.md model card"):
        push_to_hub(tmp_path, "me/nothing", token="hf_test", endpoint=hub)
    assert FakeHub.created == [] and FakeHub.uploads == {}
