"""A request to the app under test driven by hand, in its test client's event loop: the response's
status and headers arrive, then its body is held back until the test lets it go, so that a test can
act between the two (another request, through the same client) or have the client leave midway.
The test client alone cannot: it starts reading the body as soon as the head has come."""

from __future__ import annotations

import threading
from urllib.parse import urlencode

import anyio
from starlette.testclient import TestClient

# Time enough for a held exchange's app to answer its head on a loaded machine.
WAIT_S = 30


class HeldExchange:
    """GET ``path`` (with ``params`` and ``headers``), its head received. ``read_body`` lets the
    body come to its end; ``leave_after`` lets ``chunks`` parts of it through, then the client
    disconnects. The client's side of what happened is kept: ``status``, ``headers``, ``body``, and
    ``complete`` (the app sent the last part of its body)."""

    def __init__(self, client: TestClient, path: str, *, params: dict, headers: dict) -> None:
        self._portal = portal = client.portal
        self._app = client.app
        self._head = threading.Event()
        self._release = portal.call(anyio.Event)
        self._client_left = portal.call(anyio.Event)
        self._chunks_allowed: int | None = None
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body = b""
        self.complete = False
        self._scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
            "query_string": urlencode(params).encode(), "server": ("testserver", 80), "client": ("127.0.0.1", 50000),
            "headers": [(b"host", b"testserver"), *((k.lower().encode(), v.encode()) for k, v in headers.items())],
        }
        self._done = portal.start_task_soon(self._run)
        if not self._head.wait(WAIT_S):
            raise AssertionError(f"no response head within {WAIT_S} s")
        if self._done.done():
            self._done.result()  # the app failed before its head: its exception

    def read_body(self) -> bytes:
        self._portal.call(self._release.set)
        self._done.result(WAIT_S)
        return self.body

    def leave_after(self, chunks: int) -> bytes:
        self._chunks_allowed = chunks
        self._portal.call(self._release.set)
        self._done.result(WAIT_S)
        return self.body

    async def _run(self) -> None:
        requested = False

        async def receive():
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await self._client_left.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
                self._head.set()
                await self._release.wait()
            elif message["type"] == "http.response.body":
                if self._chunks_allowed is not None:
                    if self._chunks_allowed == 0:
                        # This part never reaches the client: it has gone, and says so.
                        self._client_left.set()
                        await anyio.sleep_forever()
                    self._chunks_allowed -= 1
                self.body += message.get("body", b"")
                self.complete = not message.get("more_body", False)

        try:
            await self._app(self._scope, receive, send)
        finally:
            self._head.set()
