"""An audio file's transcript by the project's own engine, on demand: requestAudioTranscription,
getAudioTranscription.

A request answers at once (200, as every success does, like an export's start): the run queued or
under way, or a finished one as it is (models.audio.transcription); the workers make it meanwhile.
"""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import iso
from models.audio import transcription
from models.audio.transcription import TranscriptionRecord


def transcription_shape(record: TranscriptionRecord) -> dict:
    return {"audioId": record.audio_id, "status": record.status, "text": record.text, "language": record.language,
            "durationSeconds": record.duration_seconds, "words": record.words, "error": record.error,
            "createdAt": iso(record.created_at), "finishedAt": iso(record.finished_at)}


def request_audio_transcription(workspaceId: str, audioId: str, principal, force: bool = False):
    requested = transcription.request_transcription(principal, workspace_id=workspaceId, audio_id=audioId,
                                                    force=force)
    shaped = {"transcription": transcription_shape(requested.transcription)}
    if requested.queued:
        return ok(shaped, f"Transcription {requested.transcription.status}")
    return ok(shaped, f"Transcription already {requested.transcription.status}")


def get_audio_transcription(workspaceId: str, audioId: str):
    return ok({"transcription": transcription_shape(
        transcription.get_transcription(workspace_id=workspaceId, audio_id=audioId))})
