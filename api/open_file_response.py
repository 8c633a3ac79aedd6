"""A file answered from a descriptor opened before the answer began.

starlette's FileResponse opens its path only once the status and headers are sent: a file renamed
over or removed in between (a recording replaced by a new upload, or deleted with its call) leaves
a response that promised a Content-Length and then has no body to send. Here the file is opened by
the caller, its headers describe that open file (fstat, not the path), and the body is read from
that descriptor, which stays readable after its name is unlinked (POSIX): a download that has
begun finishes with the bytes it began with. Ranges, If-Range and HEAD are answered as
FileResponse answers them; the range header is judged by the handler beforehand (``ranges``), so
that a bad one is answered in the API's envelope.
"""
from __future__ import annotations

import os
from secrets import token_hex
from typing import BinaryIO

import anyio
import anyio.to_thread
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import FileResponse
from starlette.types import Receive, Scope, Send

# Read from disk in pieces of this size, each in a worker thread.
CHUNK_BYTES = 64 * 1024


class OpenFileResponse(FileResponse):
    """``file`` (open, binary, owned from now on: closed once the answer ends or fails) as the
    response body, with the validators and length of what was opened."""

    def __init__(self, file: BinaryIO, *, media_type: str) -> None:
        self.file = file
        stat_result = os.fstat(file.fileno())
        super().__init__(file.name, media_type=media_type, stat_result=stat_result)
        self.size = stat_result.st_size

    def ranges(self, header: str) -> list[tuple[int, int]]:
        """The ranges of ``header`` in this file, [start, end) each; none when there are too many
        to serve (the whole file is sent). starlette's MalformedRangeHeader or RangeNotSatisfiable
        for a header that cannot be served."""
        return self._parse_range_header(header, self.size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._answer(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):  # closed even when the transfer is cancelled
                await anyio.to_thread.run_sync(self.file.close)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"].upper()
        headers = Headers(scope=scope)
        if_range = headers.get("if-range")
        ranges: list[tuple[int, int]] = []
        if method in ("GET", "HEAD") and (header := headers.get("range")) is not None \
                and (if_range is None or self._should_use_range(if_range)):
            ranges = self.ranges(header)
        head_only = method == "HEAD"
        if len(ranges) == 0:
            start = {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            parts = [(0, self.size)]
        elif len(ranges) == 1:
            (first, end), = ranges
            raw = MutableHeaders(raw=list(self.raw_headers))
            raw["content-range"] = f"bytes {first}-{end - 1}/{self.size}"
            raw["content-length"] = str(end - first)
            start = {"type": "http.response.start", "status": 206, "headers": raw.raw}
            parts = ranges
        else:
            boundary = token_hex(13)
            length, part_head = self.generate_multipart(ranges, boundary, self.size, self.headers["content-type"])
            raw = MutableHeaders(raw=list(self.raw_headers))
            raw["content-type"] = f"multipart/byteranges; boundary={boundary}"
            raw["content-length"] = str(length)
            start = {"type": "http.response.start", "status": 206, "headers": raw.raw}
            parts = [(first, end, part_head(first, end)) for first, end in ranges]
        await send(start)
        if head_only:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        async with anyio.create_task_group() as tasks:
            # Under ASGI 2.3 (uvicorn's) a send to a client that left returns as if it went: only
            # the disconnect message tells, and ends the reading of a file no one will get.
            async def stop_on_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tasks.cancel_scope.cancel()

            tasks.start_soon(stop_on_disconnect)
            if len(ranges) > 1:
                for first, end, part_head in parts:
                    await send({"type": "http.response.body", "body": part_head, "more_body": True})
                    await self._send_bytes(send, first, end, last=False)
                    await send({"type": "http.response.body", "body": b"\r\n", "more_body": True})
                await send({"type": "http.response.body", "body": f"--{boundary}--".encode("latin-1"),
                            "more_body": False})
            else:
                (first, end), = parts
                await self._send_bytes(send, first, end, last=True)
            tasks.cancel_scope.cancel()

    async def _send_bytes(self, send: Send, first: int, end: int, *, last: bool) -> None:
        fd = self.file.fileno()
        if first == end:  # an empty file
            await send({"type": "http.response.body", "body": b"", "more_body": not last})
        while first < end:
            chunk = await anyio.to_thread.run_sync(os.pread, fd, min(CHUNK_BYTES, end - first), first)
            if not chunk:
                # The open file was cut shorter than its fstat said (written to in place: never
                # done here). The answer cannot keep its Content-Length: it ends incomplete.
                raise OSError(f"{self.file.name} ended at {first} of the {end} bytes promised")
            first += len(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": not last or first < end})
