"""Refuses request bodies over the configured size with 413, deciding while reading.

A declared Content-Length over the limit is refused before reading. A chunked body (no
Content-Length) is read up to the limit and handed on with its length set, because the
request validator reads a missing Content-Length as a missing body.
"""
from __future__ import annotations

from connexion.exceptions import ProblemException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(ProblemException):
    def __init__(self, limit: int):
        super().__init__(status=413, title="Payload Too Large",
                         detail=f"The request body is larger than the limit of {limit} bytes.")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        declared = headers.get(b"content-length")
        if declared is not None:
            if declared.isdigit() and int(declared) > self.max_body_bytes:
                raise BodyTooLarge(self.max_body_bytes)
        elif b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            body = await self._read_chunked(receive)
            scope = {**scope, "headers": [*scope["headers"], (b"content-length", str(len(body)).encode())]}
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _read_chunked(self, receive: Receive) -> bytes:
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts)
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                raise BodyTooLarge(self.max_body_bytes)
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
