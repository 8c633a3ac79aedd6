"""A call's recording (uploadCallRecording, getCallRecording).

The upload is the one handler that reads its own body: it runs on the event loop and writes the
stream to disk a buffer at a time (models.calls.recordings), so a 100 MB file never sits in memory; its
SQL runs in worker threads, each in a session of its own. A download is answered from the file
opened before its status is sent (api.open_file_response), so a new upload or a deletion meanwhile
does not cut it short.
"""
from __future__ import annotations

import functools

import anyio.to_thread
import connexion
from starlette.requests import ClientDisconnect
from starlette.responses import MalformedRangeHeader, RangeNotSatisfiable

from api.envelope import ok
from api.offload import in_session
from api.open_file_response import OpenFileResponse
from handlers.wire import iso
from models.calls import calls, recordings
from models.kernel.errors import DomainError, InvalidInput

# Written to disk in pieces of this size: one thread hop per MiB, not per network read.
WRITE_BUFFER_BYTES = 1024 * 1024


class RangeOutside(DomainError):
    status = 416
    code = "range_not_satisfiable"


async def upload_call_recording(callId: str, workspaceId: str):
    request = connexion.request
    content_type = recordings.format_of(request.headers.get("content-type"))
    await in_session(calls.require_call, workspace_id=workspaceId, call_id=callId)
    part = await anyio.to_thread.run_sync(recordings.part_file, workspaceId, callId)
    try:
        size, head = await receive_to(part, request.stream())
        if size == 0:
            raise InvalidInput("The recording is empty: send the audio file as the request body.")
        final = await anyio.to_thread.run_sync(recordings.finish_part, part)
        part = final
        stored = await in_session(recordings.attach, workspace_id=workspaceId, call_id=callId, path=final,
                                   content_type=recordings.stored_type(content_type, head), size=size)
    except BaseException:
        part.unlink(missing_ok=True)  # not in a thread: a cancelled request could not await one
        raise
    return ok({"callId": callId, "contentType": stored.content_type, "bytes": stored.size,
               "uploadedAt": iso(stored.uploaded_at), "transcriptionStatus": "pending"}, "Recording uploaded")


async def receive_to(part, stream) -> tuple[int, bytes]:
    """The body written to ``part``; its size and first bytes (which name the format of a body sent
    as application/octet-stream). The stream itself fails with 413 past MAX_RECORDING_BYTES, and
    with 408 when it stalls (api.body_limit)."""
    size, pending, buffered, head = 0, 0, [], b""
    with open(part, "wb") as handle:
        write = functools.partial(_write_all, handle)
        while True:
            try:
                chunk = await anext(stream, None)
            except ClientDisconnect:
                raise InvalidInput("The client went away before the recording's body was complete.") from None
            if chunk is None:
                break
            size += len(chunk)
            if len(head) < recordings.SNIFF_BYTES:
                head += chunk[:recordings.SNIFF_BYTES - len(head)]
            buffered.append(chunk)
            pending += len(chunk)
            if pending >= WRITE_BUFFER_BYTES:
                await anyio.to_thread.run_sync(write, buffered)
                buffered, pending = [], 0
        if buffered:
            await anyio.to_thread.run_sync(write, buffered)
    return size, head


def _write_all(handle, chunks: list[bytes]) -> None:
    handle.write(b"".join(chunks))


async def get_call_recording(callId: str, workspaceId: str):
    recording = await in_session(recordings.open_recording, workspace_id=workspaceId, call_id=callId)
    return recording_answer(recording)


def recording_answer(recording) -> OpenFileResponse:
    """The opened recording, whole or the part the request's Range asks for; the file is closed
    if the answer cannot be made."""
    try:
        response = OpenFileResponse(recording.file, media_type=recording.content_type)
        if (Range := connexion.request.headers.get("range")) is not None:
            _check_range(response, Range)
    except BaseException:
        recording.file.close()
        raise
    return response


def _check_range(response: OpenFileResponse, header: str) -> None:
    # starlette answers a bad range in plain text; this service answers in its envelope.
    try:
        response.ranges(header)
    except MalformedRangeHeader as exc:
        raise InvalidInput(f"Invalid Range header: {exc.content}") from None
    except RangeNotSatisfiable:
        raise RangeOutside(f"The range {header[:40]!r} lies outside the recording's {response.size} bytes.",
                           headers={"Content-Range": f"bytes */{response.size}"}) from None
