"""Background transcription of uploaded call recordings: a durable job per call.

A job is a row, written in the transaction that names the call's recording, so no upload is
acknowledged without its job. A worker claims the oldest due job by setting a lease
(models.kernel.leases: one UPDATE whose subquery picks the row, FOR UPDATE SKIP LOCKED on
PostgreSQL, so concurrent claimers in several processes take different jobs; SQLite has one writer
at a time). While it transcribes, the worker renews the lease; a job whose lease ran out (its
process died mid-job) is due again and taken by another worker, so a restart loses no job. A job fails for good after MAX_ATTEMPTS.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from models.calls.tables import Call, TranscriptionJob
from models.kernel.db import database, utcnow
from models.kernel.leases import LeasedWork
from models.speech.customisation import stored_transcript

JOB_STATUSES = ("pending", "running", "done", "failed")
MAX_ATTEMPTS = 3


class Claimed(NamedTuple):
    call_id: str
    workspace_id: str
    attempt: int
    path: str
    lease_token: datetime  # the lease's end as set: a renewal or an outcome holds only for it


# The oldest job that is pending, or running with a lease that ran out (its process died).
_JOBS = LeasedWork(
    table="transcription_job", key="call_id",
    due="w.status = 'pending' OR (w.status = 'running' AND w.lease_until < {p})",
    order="w.created_at, w.call_id",
    claim_sets="status = 'running', attempts = attempts + 1, lease_until = {p}, updated_at = {p}",
    returning="call_id, workspace_id, attempts", token="lease_until")


def claim(lease_s: float, now: datetime | None = None) -> Claimed | None:
    """The oldest due job, leased to the caller for ``lease_s`` seconds, or None."""
    now = now or utcnow()
    until = now + timedelta(seconds=lease_s)
    with database.atomic():
        row = _JOBS.claim(until, now, now)
        if row is None:
            return None
        path = Call.in_workspace(row[1], Call.recording_path).where(Call.id == row[0]).tuples().first()
        Call.update(transcription_status="running").where(Call.id == row[0]).execute()
    return Claimed(row[0], row[1], row[2], path[0] if path else None, until)


def renew(job: Claimed, lease_s: float) -> Claimed | None:
    """The lease extended, or None if the job is no longer this worker's (re-uploaded, deleted,
    or taken after the lease ran out): the claim's token is the lease's end it set."""
    until = utcnow() + timedelta(seconds=lease_s)
    if not _JOBS.renew(job.call_id, token=job.lease_token, until=until):
        return None
    return job._replace(lease_token=until)


def _still_mine(job: Claimed):
    return ((TranscriptionJob.call == job.call_id) & (TranscriptionJob.status == "running")
            & (TranscriptionJob.lease_until == job.lease_token))


def complete(job: Claimed, *, text: str, words: list[dict], language: str) -> bool:
    """The transcript stored on the call (with the workspace's vocabulary and speech filter) and the
    job done, if the job is still this worker's."""
    now = utcnow()
    with database.atomic():
        if not TranscriptionJob.update(status="done", lease_until=None, error=None, updated_at=now).where(
                _still_mine(job)).execute():
            return False
        text, words = stored_transcript(job.workspace_id, text, words)
        Call.update(transcription_status="done", transcription_error=None, transcription_text=text,
                    transcription_words=words, transcription_language=language, transcribed_at=now).where(
            Call.id == job.call_id).execute()
    return True


def release(job: Claimed) -> bool:
    """The job back in the queue, as if never claimed (its process is stopping mid-job)."""
    with database.atomic():
        if not TranscriptionJob.update(status="pending", lease_until=None, attempts=TranscriptionJob.attempts - 1,
                                       updated_at=utcnow()).where(_still_mine(job)).execute():
            return False
        Call.update(transcription_status="pending").where(Call.id == job.call_id).execute()
    return True


def fail(job: Claimed, error: str, *, retry: bool, retry_in_s: float = 5.0) -> str | None:
    """The attempt failed: due again after ``retry_in_s`` while attempts remain and ``retry``
    (a fault of the machine, not of the file), else failed for good with ``error``. Returns the
    job's new status, or None if it is no longer this worker's."""
    now = utcnow()
    final = not retry or job.attempt >= MAX_ATTEMPTS
    status = "failed" if final else "running"  # running with a lease in the past: due at its end
    with database.atomic():
        if not TranscriptionJob.update(status=status, error=error, updated_at=now,
                                       lease_until=None if final else now + timedelta(seconds=retry_in_s)).where(
                _still_mine(job)).execute():
            return None
        Call.update(transcription_status="failed" if final else "pending",
                    transcription_error=error if final else None).where(Call.id == job.call_id).execute()
    return status
