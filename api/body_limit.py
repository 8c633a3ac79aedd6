"""Refuses request bodies over the configured size with 413, while reading, without buffering them."""
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
        limit = self.max_body_bytes
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(limit)
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, counting_receive, send)
