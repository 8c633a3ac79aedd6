"""Call recordings (and audio files) uploaded over the management API."""

from __future__ import annotations

import io
import wave

from tests.support.client import Api
from tests.support.speech import FIXTURES

WAV = (FIXTURES / "jfk.wav").read_bytes()


def upload(api: Api, call_id: str, body, content_type: str = "audio/wav", expect: int = 200, headers=None):
    response = api.client.put(f"/api/v2/call/{call_id}/recording", content=body,
                              params={"workspaceId": api.actor.workspace_id},
                              headers={**api.actor.headers, "Content-Type": content_type, **(headers or {})})
    assert response.status_code == expect, response.text
    body = response.json()
    assert body["success"] is (expect == 200)
    return body["data"]["result"] if expect == 200 else body["data"]


def long_recording(repeats: int) -> bytes:
    """The JFK clip ``repeats`` times over, as one WAV: long enough to stop a server mid-job."""
    with wave.open(str(FIXTURES / "jfk.wav")) as clip:
        params, frames = clip.getparams(), clip.readframes(clip.getnframes())
    out = io.BytesIO()
    with wave.open(out, "wb") as joined:
        joined.setparams(params)
        joined.writeframes(frames * repeats)
    return out.getvalue()
