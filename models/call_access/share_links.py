"""Share links: a call shown to whoever holds the link, without a credential, until it expires or
is revoked.

A member makes a link for a call, good for ``expires_in_hours`` (72 by default, 1 to 720), with or
without the recording. Its token is shown once, in the link's path, and kept as its SHA-256. What
the link shows is the call's summary, transcript, times, duration and agent's name, and the
customer's number masked whoever asks (``models.calls.export.mask_phone``): no id, no tag, no
structured data, no phone book name. The recording comes through the link only if it includes
it. A link refused for any reason (unknown, malformed, revoked, expired; its recording not
included or not uploaded) is the same 404: a guesser learns nothing from telling them apart.
A call's deletion deletes its links (the foreign key cascades), a workspace's deletion too.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from peewee import JOIN, fn

from models.call_access.tables import CallShareLink
from models.calls.calls import require_call
from models.calls.export import mask_phone
from models.calls.recordings import OpenRecording, open_recording
from models.calls.tables import Call
from models.configs.tables import Agent
from models.identity.principal import Principal
from models.kernel.db import database, utcnow
from models.kernel.errors import Conflict, InvalidInput, NotFound
from models.kernel.pagination import Page, PageQuery
from models.kernel.scoping import same_workspace
from models.kernel.secrets import SHARE_LINK_PREFIX, digest, matches, new_secret

DEFAULT_HOURS = 72
MIN_HOURS = 1
MAX_HOURS = 720
# Links of one call that have not expired or been revoked: enough for anyone, and a bound on rows.
MAX_OPEN_PER_CALL = 100
# Where a link is read, below the API's base path: the token follows.
SHARED_PATH = "/shared/calls/"
_TOKEN_CHARS = len(SHARE_LINK_PREFIX) + 43


class LinkRefused(NotFound):
    """The one refusal of a shared call, whatever was wrong with the link."""

    def __init__(self) -> None:
        super().__init__("No shared call at this link: it is unknown, revoked or expired.")


class ShareLinkRecord(NamedTuple):
    id: str
    workspace_id: str
    call_id: str
    include_recording: bool
    created_by: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None

    def status(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= now else "active"


class SharedCall(NamedTuple):
    """What a link shows of its call."""
    agent_name: str | None
    customer: str | None  # masked
    started_at: datetime
    ended_at: datetime
    duration_ms: float
    status: str | None
    summary: str | None
    transcript: str | None
    recording: bool  # whether GET .../recording serves it


_L = CallShareLink
_COLUMNS = (_L.id, _L.workspace, _L.call, _L.include_recording, _L.created_by, _L.created_at, _L.expires_at,
            _L.revoked_at)


def _of_call(workspace_id, call_id, *columns):
    return _L.in_workspace(workspace_id, *columns).where(_L.call == call_id)


# Newest first, along the index (call, created_at, id).
_LINKS = PageQuery(
    lambda workspace_id, call_id, limit, offset:
        _of_call(workspace_id, call_id, *_COLUMNS).order_by(_L.created_at.desc(), _L.id.desc())
        .limit(limit).offset(offset),
    lambda workspace_id, call_id: _of_call(workspace_id, call_id, fn.COUNT(_L.id)))


def create(principal: Principal, *, workspace_id: str, call_id: str, expires_in_hours: int = DEFAULT_HOURS,
           include_recording: bool = False, now: datetime | None = None) -> tuple[ShareLinkRecord, str]:
    """The link's record and its token, in clear this once."""
    now = now or utcnow()
    if not MIN_HOURS <= expires_in_hours <= MAX_HOURS:
        raise InvalidInput(f"expiresInHours must be {MIN_HOURS} to {MAX_HOURS}; {expires_in_hours} given.")
    with database.atomic():
        # Written first, the call's row orders concurrent links of the call, for the bound: its row
        # lock on PostgreSQL, the database's write lock on SQLite.
        if not Call.update(id=Call.id).where((Call.workspace == workspace_id) & (Call.id == call_id)).execute():
            raise NotFound(f"No call {call_id} in this workspace.")
        open_links = _of_call(workspace_id, call_id, fn.COUNT(_L.id)).where(
            _L.revoked_at.is_null() & (_L.expires_at > now)).scalar()
        if open_links >= MAX_OPEN_PER_CALL:
            raise Conflict(f"A call has at most {MAX_OPEN_PER_CALL} share links open; revoke one first.")
        token = new_secret(SHARE_LINK_PREFIX)
        row = _L.create(workspace=workspace_id, call=call_id, token_hash=digest(token),
                        include_recording=include_recording, created_by=principal.user_id, created_at=now,
                        expires_at=now + timedelta(hours=expires_in_hours))
    return ShareLinkRecord(row.id, workspace_id, call_id, include_recording, principal.user_id, now,
                           row.expires_at, None), token


def list_links(*, workspace_id: str, call_id: str, limit: int, offset: int) -> Page[ShareLinkRecord]:
    page = _LINKS.page(ShareLinkRecord, workspace_id=workspace_id, call_id=call_id, limit=limit, offset=offset)
    if page.total == 0:
        require_call(workspace_id, call_id)  # no links, or no such call (404)
    return page


def revoke(*, workspace_id: str, call_id: str, link_id: str, now: datetime | None = None) -> ShareLinkRecord:
    """The link stops working at once; revoking it again changes nothing."""
    now = now or utcnow()
    with database.atomic():
        _L.update(revoked_at=now).where((_L.workspace == workspace_id) & (_L.call == call_id) & (_L.id == link_id)
                                        & _L.revoked_at.is_null()).execute()
        row = _of_call(workspace_id, call_id, *_COLUMNS).where(_L.id == link_id).tuples().first()
    if row is None:
        raise NotFound(f"No share link {link_id} of the call {call_id} in this workspace.")
    return ShareLinkRecord(*row)


def _check_form(token: str) -> None:
    if not isinstance(token, str) or len(token) != _TOKEN_CHARS or not token.startswith(SHARE_LINK_PREFIX):
        raise LinkRefused()


def _open(token: str, now: datetime):
    """The link of ``token`` if it is open. Found by its token's hash in every workspace: the token
    is what says which workspace."""
    return (_L.token_hash == digest(token)) & _L.revoked_at.is_null() & (_L.expires_at > now)


def _open_link(token: str, now: datetime) -> ShareLinkRecord:
    _check_form(token)
    row = _L.select(*_COLUMNS, _L.token_hash).where(_open(token, now)).tuples().first()
    if row is None or not matches(token, row[-1]):
        raise LinkRefused()
    return ShareLinkRecord(*row[:-1])


def shared_call(token: str, *, now: datetime | None = None) -> SharedCall:
    """What the link shows of its call, read with the link in one statement."""
    _check_form(token)
    row = (_L.select(_L.token_hash, Agent.name, Call.customer, Call.started_at, Call.ended_at, Call.duration_ms,
                     Call.status, Call.summary, fn.COALESCE(Call.transcript, Call.transcription_text),
                     _L.include_recording & Call.recording_path.is_null(False))
           .join(Call, on=same_workspace(Call.id == _L.call, Call, _L))
           .join_from(Call, Agent, JOIN.LEFT_OUTER, on=same_workspace(Agent.id == Call.agent_id, Agent, Call))
           .where(_open(token, now or utcnow())).tuples().first())
    if row is None or not matches(token, row[0]):
        raise LinkRefused()
    name, customer, *rest, recording = row[1:]
    return SharedCall(name, mask_phone(customer), *rest, bool(recording))


def open_shared_recording(token: str, *, now: datetime | None = None) -> OpenRecording:
    """The call's recording, open (the caller closes it), if the link includes it."""
    link = _open_link(token, now or utcnow())
    if not link.include_recording:
        raise LinkRefused()
    try:
        return open_recording(workspace_id=link.workspace_id, call_id=link.call_id)
    except NotFound:
        raise LinkRefused() from None
