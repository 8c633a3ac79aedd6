"""The speech filter: previewSpeechFilter."""
from __future__ import annotations

from api.envelope import ok
from models.speech import customisation


def preview_speech_filter(workspaceId: str, body: dict):
    text, matches = customisation.preview(workspace_id=workspaceId, text=body["text"], given=body.get("filter"))
    return ok({"text": text, "matches": [{"kind": m.kind, "start": m.start, "end": m.end} for m in matches]})
