"""push_to_hub against a local HTTP server speaking the Hub's upload API: the Hub itself is unreachable here, so the
calls are intercepted at the HTTP layer (nothing in huggingface_hub is mocked)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sbert_nonling import export_text_model
from sbert_nonling.app import get_recipe
from sbert_nonling.export.model_card import write_model_card
from sbert_nonling.export.publish import push_to_hub


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
            return self._reply({"files": [{"path": item["path"], "uploadMode": "regular", "shouldIgnore": False} for item in files]})
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

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the test suite runs with HF_HUB_OFFLINE=1
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
    write_model_card(folder, get_recipe("simcse-unsup"), form, name=f"me/{form}")
    url = push_to_hub(folder, f"me/tiny-{form}", token="hf_test", private=True, endpoint=hub)
    assert url.endswith("/commit/" + "0" * 40)
    assert FakeHub.created == [{"name": f"tiny-{form}", "organization": "me", "visibility": "private"}]
    assert FakeHub.uploads == _files(folder)  # the exact file set and bytes
    assert {"README.md", "modules.json"} <= set(FakeHub.uploads) and len(FakeHub.validated) == 1


def test_folders_that_are_not_models_are_refused_before_any_request(tmp_path, hub):
    with pytest.raises(ValueError, match="no modules.json"):
        push_to_hub(tmp_path, "me/nothing", token="hf_test", endpoint=hub)
    (tmp_path / "modules.json").write_text("[]")
    with pytest.raises(ValueError, match="no README.md model card"):
        push_to_hub(tmp_path, "me/nothing", token="hf_test", endpoint=hub)
    assert FakeHub.created == [] and FakeHub.uploads == {}
