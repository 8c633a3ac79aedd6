"""A request for any operation of the contract, built from the contract's own examples, so that the
tests that cover every operation need no hand-kept list of them."""
from __future__ import annotations

import json
from pathlib import Path

from api.contract import Operation

# An upload's example (an operation whose body is a file): a real recording.
UPLOAD_EXAMPLE = (Path(__file__).resolve().parent.parent / "fixtures" / "jfk.wav").read_bytes()


def takes_json(op: Operation) -> bool:
    """Its body is JSON (neither an upload nor a text file such as a CSV import)."""
    return "application/json" in op.spec.get("requestBody", {}).get("content", {})


def body_media_type(op: Operation) -> str:
    """The media type a body of ``op`` is sent as: its first one (an audio upload's is audio/wav)."""
    return "audio/wav" if _takes_audio(op) else next(iter(op.spec["requestBody"]["content"]))


def _takes_audio(op: Operation) -> bool:
    return op.streams_body and "audio/*" in op.spec["requestBody"]["content"]


def example_request(op: Operation, workspace_id: str, *, largest_body: bool = False,
                    overrides: dict | None = None) -> tuple[str, dict, object]:
    """The operation's path, query and body from the contract's examples (UPLOAD_EXAMPLE for an audio file, the
    example of its first media type for another file), acting in
    ``workspace_id``; the first body example, or with ``largest_body`` the one with most fields.
    ``overrides`` replaces the examples of the parameters it names."""
    path, query, overrides = op.path, {}, overrides or {}
    for parameter in op.parameters:
        value = workspace_id if parameter["name"] == "workspaceId" else parameter.get("example")
        value = overrides.get(parameter["name"], value)
        if value is None:
            assert not parameter.get("required"), f"{op.operation_id}: {parameter['name']} needs an example"
            continue
        if isinstance(value, list):
            value = ",".join(map(str, value))
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", str(value))
        else:
            query[parameter["name"]] = str(value)
    body = None
    if _takes_audio(op):
        body = UPLOAD_EXAMPLE
    elif op.streams_body:
        body = op.spec["requestBody"]["content"][body_media_type(op)]["example"].encode()
    elif "requestBody" in op.spec:
        examples = [e["value"] for e in op.spec["requestBody"]["content"][body_media_type(op)]["examples"].values()]
        body = max(examples, key=lambda value: len(json.dumps(value))) if largest_body else examples[0]
    return path, query, body


def encoded(op: Operation, body) -> tuple[bytes | None, dict]:
    """A body from example_request as sent: JSON, an upload's file as its media type (audio/wav for
    audio), a text file (a CSV) as its media type."""
    if body is None:
        return None, {}
    if op.streams_body:
        return body, {"Content-Type": body_media_type(op)}
    if not takes_json(op):
        return body.encode() if isinstance(body, str) else body, {"Content-Type": body_media_type(op)}
    return json.dumps(body).encode(), {"Content-Type": "application/json"}  # ASCII escapes


def example_path_params(op: Operation) -> dict[str, str]:
    """The path parameters of the operation's example request."""
    return {p["name"]: str(p["example"]) for p in op.parameters if p["in"] == "path"}
