"""Refuses request bodies over the configured size with 413, deciding while reading.

A declared Content-Length over the limit is refused before reading. A chunked body (no
Content-Length) is read up to the limit and handed on with its length set, because the
request validator reads a missing Content-Length as a missing body.

An upload (an operation whose body the contract declares binary: api.contract
``Operation.streams_body``) has its own, larger limit, and is never buffered here: its handler
reads the stream, and this middleware counts the bytes as they pass, failing the read with 413
once they exceed the limit (the handler then drops what it wrote).

Every body, an upload's or a JSON one, fails with 408 when the client sends nothing of it for
``body_stall_s``: a client that declares a length and goes quiet holds no connection, no task and
no file for ever. Once the body is complete the timer is off, so a streamed response that waits
on ``receive`` for the client's disconnect is not cut short.
"""
from __future__ import annotations

import anyio
from connexion.exceptions import ProblemException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(ProblemException):
    def __init__(self, limit: int):
        super().__init__(status=413, title="Payload Too Large",
                         detail=f"The request body is larger than the limit of {limit} bytes.")


class BodyStalled(ProblemException):
    def __init__(self, seconds: float):
        # The rest of the body may still come: the connection cannot carry another request.
        super().__init__(status=408, title="Request Timeout", headers={"Connection": "close"},
                         detail=f"The request body sent nothing for {seconds:g} seconds and was dropped.")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int, max_upload_bytes: int, uploads: frozenset[str],
                 body_stall_s: float) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_upload_bytes = max_upload_bytes
        self.uploads = uploads  # operation ids
        self.body_stall_s = body_stall_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        declared = headers.get(b"content-length")
        if (declared is None or declared == b"0") and b"transfer-encoding" not in headers:
            # No body (HTTP/1.1 frames one only by length or chunks): nothing to count or to time.
            await self.app(scope, receive, send)
            return
        upload = scope.get("extensions", {}).get("connexion_routing", {}).get("operation_id") in self.uploads
        limit = self.max_upload_bytes if upload else self.max_body_bytes
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(limit)
        receive = _counted(receive, limit, self.body_stall_s)
        if not upload and declared is None and b"chunked" in headers.get(b"transfer-encoding", b"").lower():
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


def _counted(receive: Receive, limit: int, stall_s: float) -> Receive:
    size, complete = 0, False

    async def counted() -> Message:
        nonlocal size, complete
        if complete:
            return await receive()
        try:
            with anyio.fail_after(stall_s):
                message = await receive()
        except TimeoutError:
            raise BodyStalled(stall_s) from None
        complete = message["type"] != "http.request" or not message.get("more_body", False)
        size += len(message.get("body", b""))
        if size > limit:
            raise BodyTooLarge(limit)
        return message

    return counted


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
