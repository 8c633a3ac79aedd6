"""Call recordings: audio files under DATA_DIR/recordings/<workspace>/, one per call.

An upload is streamed to a ``.part`` file beside its final place, flushed to disk, renamed, and only
then named in the call's row (in the transaction that queues its transcription): a call never
names a file that is not whole, and a failed or refused upload leaves nothing behind. A new upload
replaces the file the call named, which is removed once the new one is committed: each upload
has a file name of its own, so a download that opened the old file reads it to its end.
"""
from __future__ import annotations

import os
import secrets
import shutil
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, NamedTuple

from models.calls.tables import Call, TranscriptionJob
from models.kernel.db import after_commit, database, is_postgres, utcnow
from models.kernel.errors import NotFound, UnsupportedMediaType

# The speech engine's formats (stt.audio.SUPPORTED_FORMATS), by the content types that name them.
CONTENT_TYPES = {
    "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/flac": "flac", "audio/x-flac": "flac",
    "audio/ogg": "ogg", "audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/m4a": "m4a", "audio/webm": "webm",
}
# A client that does not know its file's type (or a generic HTTP tool) sends it as bytes: the
# format is then read from the file's first bytes (see sniff), as the speech engine reads it.
OCTET_STREAM = "application/octet-stream"
# Bytes enough for every signature below.
SNIFF_BYTES = 12
_root: Path | None = None


def recording_path(workspace_id: str, call_id: str) -> tuple[str | None] | None:
    """(the call's recording file or None), None without the call; in a transaction, the row is
    locked, so that an upload and a delete of one call each see the file the other left (no file
    is left behind that no row names)."""
    query = Call.in_workspace(workspace_id, Call.recording_path).where(Call.id == call_id)
    if is_postgres() and database.in_transaction():
        query = query.for_update()
    return query.tuples().first()


class Recording(NamedTuple):
    content_type: str
    size: int
    uploaded_at: datetime


def configure(data_dir: str | os.PathLike) -> None:
    global _root
    _root = Path(data_dir) / "recordings"


def _directory(workspace_id: str) -> Path:
    if _root is None:
        raise RuntimeError("models.calls.recordings is not configured (core.boot does it)")
    # Workspace ids are the service's own UUIDs; the call id is checked as a UUID by the contract.
    directory = _root / workspace_id
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def format_of(content_type: str | None) -> str:
    """The recording's media type; UnsupportedMediaType naming the accepted ones if it is none of them."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in CONTENT_TYPES and media != OCTET_STREAM:
        raise UnsupportedMediaType(f"Content-Type {media or '(none)'} is not a recording format this service takes; "
                           f"send one of {', '.join(sorted(CONTENT_TYPES))}, or {OCTET_STREAM}.")
    return media


def stored_type(media: str, head: bytes) -> str:
    """The type a recording is kept and served with: the one it was sent with, or for bytes sent as
    application/octet-stream the format its first bytes show. Bytes of no known format stay
    application/octet-stream and are judged by the transcription, as a mislabelled file is."""
    return (sniff(head) or media) if media == OCTET_STREAM else media


def sniff(head: bytes) -> str | None:
    """The audio format the first ``SNIFF_BYTES`` bytes of a file show, as a media type, or None."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:4] == b"fLaC":
        return "audio/flac"
    if head[:4] == b"OggS":
        return "audio/ogg"
    if head[:4] == b"\x1a\x45\xdf\xa3":  # EBML: WebM (and Matroska, which the engine reads alike)
        return "audio/webm"
    if head[4:8] == b"ftyp":  # ISO media: M4A
        return "audio/mp4"
    # MP3: an ID3 tag, or an MPEG audio frame's sync bits with a layer set (not AAC's ADTS, layer 0).
    if head[:3] == b"ID3" or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06):
        return "audio/mpeg"
    return None


def part_file(workspace_id: str, call_id: str) -> Path:
    """Where an upload is written until it is whole: a name no other upload takes."""
    return _directory(workspace_id) / f"{call_id}.{secrets.token_hex(6)}.part"


def finish_part(part: Path) -> Path:
    """The part file flushed to disk and renamed to its final name."""
    with open(part, "rb+") as handle:
        os.fsync(handle.fileno())
    final = part.with_suffix("")  # <call>.<random>
    os.replace(part, final)
    directory = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)
    return final


def attach(*, workspace_id: str, call_id: str, path: Path, content_type: str, size: int) -> Recording:
    """Name ``path`` as the call's recording and queue its transcription, in one transaction; the
    file it replaces is removed afterwards. If the call is gone, the file goes and NotFound."""
    now = utcnow()
    with database.atomic():
        row = recording_path(workspace_id, call_id)
        if row is None:
            path.unlink(missing_ok=True)
            raise NotFound(f"No call {call_id} in this workspace.")
        Call.update(recording_path=str(path), recording_content_type=content_type, recording_bytes=size,
                    recording_uploaded_at=now, transcription_status="pending", transcription_error=None,
                    transcription_text=None, transcription_words=None, transcription_language=None,
                    transcribed_at=None).where(Call.id == call_id).execute()
        TranscriptionJob.delete().where(TranscriptionJob.call == call_id).execute()
        TranscriptionJob.insert(call=call_id, workspace=workspace_id, status="pending", attempts=0,
                                created_at=now, updated_at=now).execute()
    if row[0] and row[0] != str(path):
        delete_recording_file(row[0])
    return Recording(content_type, size, now)


class OpenRecording(NamedTuple):
    file: BinaryIO
    content_type: str


def open_recording(*, workspace_id: str, call_id: str) -> OpenRecording:
    """The call's uploaded file, open, with its content type; the caller closes it. A download
    reads what it opened here to its end whatever happens to the call meanwhile: a new upload has
    a file of its own, and the one it replaces (or a deleted call's) is unlinked, which leaves it
    readable to those who hold it open. If the file went between reading the row and opening it,
    the row is read once more: a new upload committed meanwhile names its own file."""
    for _ in range(2):
        row = (Call.in_workspace(workspace_id, Call.recording_path, Call.recording_content_type)
               .where(Call.id == call_id).tuples().first())
        if row is None:
            raise NotFound(f"No call {call_id} in this workspace.")
        if row[0] is None:
            raise NotFound(f"Call {call_id} has no uploaded recording (its report's recordingUrl, if any, is in the call).")
        try:
            return OpenRecording(open(row[0], "rb"), row[1])
        except FileNotFoundError:
            continue
    raise NotFound(f"Call {call_id}'s recording was replaced or deleted meanwhile; ask again.")


def delete_recording_file(path: str) -> None:
    """Once the deletion of the row that named it has committed."""
    after_commit(lambda: Path(path).unlink(missing_ok=True))


def delete_workspace_files(workspace_id: str) -> None:
    """A deleted workspace's recordings directory, with whatever is in it (a part file included),
    once the workspace's deletion has committed."""
    if _root is not None:
        root = _root
        after_commit(lambda: shutil.rmtree(root / workspace_id, ignore_errors=True))
