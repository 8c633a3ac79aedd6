"""The workspace audio library: uploadAudio, listAudio, getAudio, updateAudio, deleteAudio, getAudioContent.

The upload reads its own body as uploadCallRecording does (handlers.calls.call_recordings.receive_to:
streamed to a part file a buffer at a time, within MAX_RECORDING_BYTES), then PyAV reads the whole
file in a worker thread before a row names it. A download is the recording's answer (whole or by
Range) over the opened file.
"""
from __future__ import annotations

import anyio.to_thread
import connexion

from api.envelope import ok
from api.offload import in_session
from handlers.calls.call_recordings import receive_to, recording_answer
from handlers.wire import deleted, iso
from models.audio import library
from models.audio.library import AudioRecord
from models.calls import recordings
from models.kernel.errors import InvalidInput


def audio_shape(record: AudioRecord) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name, "kind": record.kind,
            "contentType": record.content_type, "bytes": record.bytes, "format": record.format,
            "durationSeconds": record.duration_seconds, "sampleRate": record.sample_rate,
            "channels": record.channels, "createdBy": record.created_by, "createdAt": iso(record.created_at),
            "updatedAt": iso(record.updated_at)}


async def upload_audio(workspaceId: str, name: str, kind: str, principal):
    request = connexion.request
    content_type = recordings.format_of(request.headers.get("content-type"))
    name, kind = library.check_name(name), library.check_kind(kind)
    part = await anyio.to_thread.run_sync(library.part_file, workspaceId)
    try:
        size, head = await receive_to(part, request.stream())
        if size == 0:
            raise InvalidInput("The audio file is empty: send it as the request body.")
        final = await anyio.to_thread.run_sync(recordings.finish_part, part)
        part = final
        stored_type = recordings.stored_type(content_type, head)
        probed = await anyio.to_thread.run_sync(library.probe, final, stored_type)
        record = await in_session(library.create_audio, principal=principal, workspace_id=workspaceId, name=name,
                                  kind=kind, path=final, content_type=stored_type, size=size, probed=probed)
    except BaseException:
        part.unlink(missing_ok=True)  # not in a thread: a cancelled request could not await one
        raise
    return ok({"audio": audio_shape(record)}, "Audio file uploaded")


def list_audio(workspaceId: str, limit: int = 20, offset: int = 0, kind: str | None = None):
    page = library.list_audio(workspace_id=workspaceId, limit=limit, offset=offset, kind=kind)
    return ok({"audio": [audio_shape(a) for a in page.items], "pagination": page.pagination()})


def get_audio(workspaceId: str, audioId: str):
    return ok({"audio": audio_shape(library.get_audio(workspace_id=workspaceId, audio_id=audioId))})


def update_audio(workspaceId: str, audioId: str, body: dict):
    record = library.update_audio(workspace_id=workspaceId, audio_id=audioId, name=body.get("name"),
                                  kind=body.get("kind"))
    return ok({"audio": audio_shape(record)}, "Audio file updated")


def delete_audio(workspaceId: str, audioId: str):
    library.delete_audio(workspace_id=workspaceId, audio_id=audioId)
    return deleted(audioId, "Audio file deleted")


async def get_audio_content(workspaceId: str, audioId: str):
    opened = await in_session(library.open_audio, workspace_id=workspaceId, audio_id=audioId)
    return recording_answer(opened)
