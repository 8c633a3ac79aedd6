"""An answer at a fixed path at the root, outside the versioned contract and before the rest of
the app (no credential, no rate limit): what probes and scrapers expect there (GET /health,
GET /metrics). GET and HEAD only; any other request goes on to the app."""
from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class RootEndpoint:
    PATH: str

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def answer(self) -> tuple[int, str, bytes, list[tuple[bytes, bytes]]]:
        """(status, content type, body, other headers)."""
        raise NotImplementedError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.PATH or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        status, content_type, body, extra = await self.answer()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
                                (b"cache-control", b"no-store"), *extra]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
