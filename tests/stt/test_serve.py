"""scripts/serve's entry point starts the speech server beside the management API, on one database."""
from __future__ import annotations

import time

import httpx

from tests.support.servers import free_port, start_server, stop_server, wait_until_ready
from tests.support.speech import FIXTURES, JFK, words


def test_serve_starts_both_servers_sharing_credentials(tmp_path, converted_model):
    stt_port = free_port()
    server = start_server(tmp_path, STT_ENABLED="true", STT_PORT=stt_port, STT_MODEL_PATH=converted_model)
    try:
        stt_url = f"http://127.0.0.1:{stt_port}"
        wait_until_ready(stt_url + "/ready", 60)
        owner = server.admin("bootstrap", "--workspace", "w", "--email", "a@example.com")
        created = httpx.post(f"{server.url}/api/v2/api-keys", params={"workspaceId": owner["workspaceId"]},
                             headers={"Authorization": f"Bearer {owner['token']}"},
                             json={"name": "speech", "userId": owner["userId"], "permissions": ["speech:transcribe"]})
        key = created.json()["data"]["result"]["key"]
        r = httpx.post(stt_url + "/v1/audio/transcriptions", headers={"Authorization": f"Bearer {key}"},
                       files={"file": ("jfk.ogg", (FIXTURES / "jfk.ogg").read_bytes())}, timeout=120)
        assert r.status_code == 200 and words(r.json()["text"]) == words(JFK)
        # Deleted in the management API, the key stops working on the speech server at once.
        httpx.delete(f"{server.url}/api/v2/api-keys", params={"workspaceId": owner["workspaceId"],
                     "ids": created.json()["data"]["result"]["apiKey"]["id"]},
                     headers={"Authorization": f"Bearer {owner['token']}"})
        r = httpx.post(stt_url + "/v1/audio/transcriptions", headers={"Authorization": f"Bearer {key}"},
                       files={"file": ("jfk.ogg", (FIXTURES / "jfk.ogg").read_bytes())}, timeout=120)
        assert r.status_code == 401
    finally:
        stop_server(server)
    # Stopping the management API stops the speech server with it.
    time.sleep(1)
    try:
        httpx.get(stt_url + "/health", timeout=2)
        raise AssertionError("the speech server outlived the management API")
    except httpx.HTTPError:
        pass
