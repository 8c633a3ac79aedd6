"""The workspace audio library: upload (a streamed file, probed with PyAV), list, get, rename or
re-kind, delete, open for download.

A file is received as a call's recording is (models.calls.recordings: the same formats, limits,
sniffing and part file renamed once whole), under DATA_DIR/audio/<workspace>/; it is named in its
row only once it is whole and PyAV has read it, and a file PyAV cannot read is removed and refused.
A deleted file's bytes go once the deletion has committed (a download that opened it reads it to
its end).
"""
from __future__ import annotations

import os
import secrets
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import av

from models.audio.tables import AudioFile
from models.calls import recordings
from models.calls.recordings import OpenRecording
from models.identity.principal import Principal
from models.kernel.db import after_commit, database, utcnow
from models.kernel.errors import InvalidInput, NotFound
from models.kernel.pagination import Page, workspace_list
from models.kernel.sql import Prepared
from models.kernel.text import text_problem

KINDS = ("greeting", "hold-music", "voicemail-drop", "other")
NAME_MAX = 200
_root: Path | None = None


class AudioRecord(NamedTuple):
    id: str
    workspace_id: str
    name: str
    kind: str
    content_type: str
    bytes: int
    format: str
    duration_seconds: float
    sample_rate: int
    channels: int
    created_by: str
    created_at: datetime
    updated_at: datetime


class Probe(NamedTuple):
    format: str
    duration_seconds: float
    sample_rate: int
    channels: int


_A = AudioFile
_COLUMNS = (_A.id, _A.workspace, _A.name, _A.kind, _A.content_type, _A.bytes, _A.format, _A.duration_seconds,
            _A.sample_rate, _A.channels, _A.created_by, _A.created_at, _A.updated_at)
_ONE = Prepared(lambda workspace_id, audio_id: _A.in_workspace(workspace_id, *_COLUMNS).where(_A.id == audio_id))
_ALL = workspace_list(_A, _COLUMNS, order_by=(_A.created_at.desc(), _A.id.desc()))
_OF_KIND = workspace_list(_A, _COLUMNS, order_by=(_A.created_at.desc(), _A.id.desc()), names=("kind",),
                          where=lambda params: [_A.kind == params["kind"]])


def configure(data_dir: str | os.PathLike) -> None:
    global _root
    _root = Path(data_dir) / "audio"


def part_file(workspace_id: str) -> Path:
    """Where an upload is written until it is whole: a name no other upload takes."""
    if _root is None:
        raise RuntimeError("models.audio.library is not configured (core.boot does it)")
    directory = _root / workspace_id  # the workspace id is the service's own UUID
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{secrets.token_hex(12)}.part"


# --- the rules -----------------------------------------------------------------------------------

def check_name(value) -> str:
    if not isinstance(value, str):
        raise InvalidInput("name must be text.")
    if problem := text_problem(value):
        raise InvalidInput(f"name {problem}.")
    value = value.strip()
    if not 1 <= len(value) <= NAME_MAX:
        raise InvalidInput(f"name must be 1 to {NAME_MAX} characters once trimmed; {len(value)} given.")
    return value


def check_kind(value) -> str:
    if value not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}.")
    return value


def probe(path: Path, content_type: str) -> Probe:
    """What PyAV reads of the file: its first audio frame decoded (a file whose header alone is
    whole is no audio), its duration, sample rate and channels. InvalidInput naming the fault if
    it is no audio PyAV can decode."""
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise InvalidInput("The file holds no audio stream.")
            stream = container.streams.audio[0]
            frame = next(container.decode(stream), None)
            if frame is None:
                raise InvalidInput("The file holds no audio frame that can be decoded.")
            if container.duration:
                duration = container.duration / av.time_base
            elif stream.duration and stream.time_base:
                duration = float(stream.duration * stream.time_base)
            else:
                raise InvalidInput("The file's duration cannot be read.")
            rate = stream.codec_context.sample_rate or frame.sample_rate
            channels = stream.codec_context.channels or len(frame.layout.channels)
            name = recordings.CONTENT_TYPES.get(content_type) or container.format.name.split(",")[0]
    except av.FFmpegError as exc:
        raise InvalidInput(f"The file is not audio this service can decode ({exc.strerror or 'undecodable'}).") from None
    return Probe(name, round(duration, 3), int(rate), int(channels))


# --- the operations ------------------------------------------------------------------------------

def create_audio(principal: Principal, *, workspace_id: str, name: str, kind: str, path: Path,
                 content_type: str, size: int, probed: Probe) -> AudioRecord:
    """The row naming the whole, probed file ``path``; the file goes if the row cannot be written."""
    now = utcnow()
    try:
        with database.atomic():
            row = _A.create(workspace=workspace_id, name=name, kind=kind, path=str(path), content_type=content_type,
                            bytes=size, format=probed.format, duration_seconds=probed.duration_seconds,
                            sample_rate=probed.sample_rate, channels=probed.channels, created_by=principal.user_id,
                            created_at=now, updated_at=now)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return get_audio(workspace_id=workspace_id, audio_id=row.id)


def list_audio(*, workspace_id: str, limit: int, offset: int, kind: str | None = None) -> Page[AudioRecord]:
    """The workspace's audio files, newest first; ``kind`` keeps one kind's. One statement per page."""
    if kind is None:
        return _ALL.page(AudioRecord, workspace_id=workspace_id, limit=limit, offset=offset)
    return _OF_KIND.page(AudioRecord, workspace_id=workspace_id, limit=limit, offset=offset, kind=check_kind(kind))


def get_audio(*, workspace_id: str, audio_id: str) -> AudioRecord:
    record = _ONE.first(AudioRecord, workspace_id=workspace_id, audio_id=audio_id)
    if record is None:
        raise NotFound(f"No audio file {audio_id} in this workspace.")
    return record


def update_audio(*, workspace_id: str, audio_id: str, name=None, kind=None) -> AudioRecord:
    """A new name or kind (or both); the file stays as it is."""
    changes = {}
    if name is not None:
        changes[_A.name] = check_name(name)
    if kind is not None:
        changes[_A.kind] = check_kind(kind)
    if not changes:
        raise InvalidInput("Give name or kind to change.")
    with database.atomic():
        changed = (_A.update({**changes, _A.updated_at: utcnow()})
                   .where((_A.workspace == workspace_id) & (_A.id == audio_id)).execute())
        if not changed:
            raise NotFound(f"No audio file {audio_id} in this workspace.")
    return get_audio(workspace_id=workspace_id, audio_id=audio_id)


def delete_audio(*, workspace_id: str, audio_id: str) -> None:
    """The row, and its file once the deletion has committed."""
    with database.atomic():
        path = (_A.in_workspace(workspace_id, _A.path).where(_A.id == audio_id).scalar())
        if path is None or not _A.delete().where((_A.workspace == workspace_id) & (_A.id == audio_id)).execute():
            raise NotFound(f"No audio file {audio_id} in this workspace.")
    after_commit(lambda: Path(path).unlink(missing_ok=True))


def open_audio(*, workspace_id: str, audio_id: str) -> OpenRecording:
    """The file, open, with its content type; the caller closes it."""
    row = _A.in_workspace(workspace_id, _A.path, _A.content_type).where(_A.id == audio_id).tuples().first()
    if row is None:
        raise NotFound(f"No audio file {audio_id} in this workspace.")
    try:
        return OpenRecording(open(row[0], "rb"), row[1])
    except FileNotFoundError:
        raise NotFound(f"Audio file {audio_id} was deleted meanwhile.") from None
