"""An audio library file's transcript by the project's own engine, on demand: requested, then made
in the background by the same transcription workers that transcribe call recordings.

A request writes the file's one row queued (answered at once). While it is queued or running, a
new request answers it as it is; once it has failed, a new request queues it again; once it has
succeeded, a new request answers the transcript unless it forces a new run. The row is a leased
job (models.kernel.leases), taken as a call recording's job is (models.calls.transcription): a
worker claims the oldest due one by setting its lease, renews the lease while it transcribes, and
stores the outcome only while the row still holds the lease it set, so that a lease that ran out
(its process died), a forced re-run or a deleted file leaves a late outcome unstored. The
transcript is stored with the workspace's vocabulary and, when it is on, its speech filter, as a
recording's is. The row goes with its file (ON DELETE CASCADE).
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from models.audio.tables import AudioFile, AudioTranscription
from models.identity.principal import Principal
from models.kernel.db import database, is_postgres, utcnow
from models.kernel.errors import NotFound
from models.kernel.leases import LeasedWork
from models.kernel.sql import Prepared
from models.speech.customisation import stored_transcript

STATUSES = ("queued", "running", "succeeded", "failed")
MAX_ATTEMPTS = 3
_T = AudioTranscription


class TranscriptionRecord(NamedTuple):
    audio_id: str
    status: str
    text: str | None
    language: str | None
    duration_seconds: float | None
    words: list[dict] | None
    error: str | None
    created_at: datetime
    finished_at: datetime | None


class Requested(NamedTuple):
    transcription: TranscriptionRecord
    queued: bool  # a run is queued or under way (new, or asked for before); False: a finished one answered


class Claimed(NamedTuple):
    audio_id: str
    workspace_id: str
    attempt: int
    path: str | None
    lease_token: datetime  # the lease's end as set: a renewal or an outcome holds only for it


_ONE = Prepared(lambda workspace_id, audio_id: _T.in_workspace(
    workspace_id, _T.audio, _T.status, _T.text, _T.language, _T.duration_seconds, _T.words, _T.error, _T.created_at,
    _T.finished_at).where(_T.audio == audio_id))

# The oldest job that is queued, or running with a lease that ran out (its process died, or a
# failed attempt waits out its retry delay).
_JOBS = LeasedWork(
    table="audio_transcription", key="audio_id",
    due="w.status = 'queued' OR (w.status = 'running' AND w.lease_until < {p})",
    order="w.created_at, w.audio_id",
    claim_sets="status = 'running', attempts = attempts + 1, lease_until = {p}, updated_at = {p}",
    returning="audio_id, workspace_id, attempts", token="lease_until")


def get_transcription(*, workspace_id: str, audio_id: str) -> TranscriptionRecord:
    """The file's transcription as it stands: one statement."""
    record = _ONE.first(TranscriptionRecord, workspace_id=workspace_id, audio_id=audio_id)
    if record is None:
        raise NotFound(f"No transcription of audio file {audio_id} in this workspace: request one first.")
    return record


def request_transcription(principal: Principal, *, workspace_id: str, audio_id: str,
                          force: bool = False) -> Requested:
    """The file's transcription queued, unless one is queued or running (answered as it is) or has
    succeeded and ``force`` is not given (its transcript answered). NotFound for a file not in the
    workspace."""
    now = utcnow()
    with database.atomic():
        # The file's row locked first: concurrent requests for one file queue one job between them.
        query = AudioFile.in_workspace(workspace_id, AudioFile.id).where(AudioFile.id == audio_id)
        if (query.for_update() if is_postgres() else query).first() is None:
            raise NotFound(f"No audio file {audio_id} in this workspace.")
        status = _T.select(_T.status).where(_T.audio == audio_id).scalar()
        queue = status is None or status == "failed" or (status == "succeeded" and force)
        if status is None:
            _T.insert(audio=audio_id, workspace=workspace_id, status="queued", attempts=0,
                      requested_by=principal.user_id, created_at=now, updated_at=now).execute()
        elif queue:
            _T.update(status="queued", attempts=0, lease_until=None, error=None, text=None, words=None,
                      language=None, duration_seconds=None, requested_by=principal.user_id, created_at=now,
                      updated_at=now, finished_at=None).where(_T.audio == audio_id).execute()
    record = get_transcription(workspace_id=workspace_id, audio_id=audio_id)
    return Requested(record, record.status in ("queued", "running"))


# --- the worker's side: the same steps as a call recording's job (models.calls.transcription) ----

def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The oldest due job, leased to the caller for ``lease_s`` seconds, with its file's path; or None."""
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    with database.atomic():
        row = _JOBS.claim(until, now, now)
        if row is None:
            return None
        path = AudioFile.in_workspace(row[1], AudioFile.path).where(AudioFile.id == row[0]).scalar()
    return Claimed(row[0], row[1], row[2], path, until)


def renew(job: Claimed, lease_s: float) -> Claimed | None:
    """The lease extended, or None if the job is no longer this worker's (forced again, its file
    deleted, or taken after the lease ran out)."""
    until = utcnow() + timedelta(seconds=lease_s)
    if not _JOBS.renew(job.audio_id, token=job.lease_token, until=until):
        return None
    return job._replace(lease_token=until)


def _still_mine(job: Claimed):
    return (_T.audio == job.audio_id) & (_T.status == "running") & (_T.lease_until == job.lease_token)


def complete(job: Claimed, *, text: str, words: list[dict], language: str, duration_seconds: float) -> bool:
    """The transcript stored (with the workspace's vocabulary and speech filter), if the job is
    still this worker's."""
    now = utcnow()
    with database.atomic():
        # Read before the write that claims the outcome: the customisation's two statements.
        text, words = stored_transcript(job.workspace_id, text, words)
        return bool(_T.update(status="succeeded", lease_until=None, error=None, text=text, words=words,
                              language=language, duration_seconds=round(duration_seconds, 3), updated_at=now,
                              finished_at=now).where(_still_mine(job)).execute())


def release(job: Claimed) -> bool:
    """The job back in the queue, as if never claimed (its process is stopping mid-job)."""
    return bool(_T.update(status="queued", lease_until=None, attempts=_T.attempts - 1, updated_at=utcnow())
                .where(_still_mine(job)).execute())


def fail(job: Claimed, error: str, *, retry: bool, retry_in_s: float = 5.0) -> str | None:
    """The attempt failed: due again after ``retry_in_s`` while attempts remain and ``retry`` (a
    fault of the machine, not of the file), else failed for good with ``error``. The job's new
    status, or None if it is no longer this worker's."""
    now = utcnow()
    final = not retry or job.attempt >= MAX_ATTEMPTS
    status = "failed" if final else "running"  # running with a lease in the past: due at its end
    changed = _T.update(status=status, error=error if final else None, updated_at=now,
                        lease_until=None if final else now + timedelta(seconds=retry_in_s),
                        finished_at=now if final else None).where(_still_mine(job)).execute()
    return status if changed else None
