"""The audit entry of each change made through the API, recorded where every handler is called.

Every operation of the contract whose method is not GET changes something (but a read marked
``x-audit: none``), so the handler wrapper (api.app) records an entry (models.audit.audit_log)
after it succeeds, in its session, with:
- the actor: the admitted principal's user and credential id; an operation that admits nobody
  (accepting an invitation) names in its result the user and the access token it made, or, marked
  ``x-audit-actor: web_call_token`` (redeeming one), the token it spent (``tokenId``);
- the operation's id; the resource's type (the path's fixed segments up to its last parameter,
  or ``x-audit-resource``) and id (that parameter's value, else the ``id`` the result carries);
- the request id and the source address;
- a summary of what the request set (its JSON body and its query parameters but the workspace and
  paging), secrets replaced, plus what the handler noted with ``note()`` (counts of what a
  purge deleted...).
The workspace is the one the request acts in; an operation that acts in none records in the one its
result names (a workspace it created), else in each workspace of the caller (a new access token
is news to every workspace it reaches). Deleting a workspace deletes its log: that entry goes to
the server's log only.

A change and its entry commit together: the wrapper runs the handler and ``record`` in one
``models.kernel.db.unit_of_work()``, so there is no change without its entry, and one commit, not two,
per request. An entry that cannot be written fails the request (500, nothing changed, the cause
in the server's log with the request id). Two kinds of operation write theirs after the change,
with ``finish``, which logs a failure and still answers: those marked ``x-audit-transaction: own``
in the contract, which must not run inside one transaction (a purge commits in batches rather than
hold one transaction across every row it deletes; a webhook subscription's URL is resolved, for up
to 2 s, where SQLite would have every writer of the process wait), and the async ones that stream
a request body.
"""
from __future__ import annotations

import logging
import re
from contextvars import ContextVar

from connexion import context

from models.audit import audit_log
from models.identity.principal import Principal
from models.identity.tables import Membership

from .request_context import request_id

log = logging.getLogger("api.audit")

_NOT_CHANGES = frozenset({"workspaceId", "limit", "offset", "body", "principal"})
_notes: ContextVar[dict | None] = ContextVar("audit_notes", default=None)


def note(**facts) -> None:
    """Facts the handler wants in its entry's ``changes`` beyond the request's own fields."""
    notes = _notes.get()
    if notes is not None:
        notes.update(facts)


class AuditedOperation:
    """What the entries of one operation share, worked out once when the app is built."""

    def __init__(self, operation_id: str, method: str, path: str, spec: dict) -> None:
        self.operation_id = operation_id
        # A read sent as a POST (its query too long for a URL: knowledge retrieval) is marked
        # ``x-audit: none``: an entry per call would grow the log by every call a runtime makes.
        self.audited = method.lower() not in ("get", "head", "options") and spec.get("x-audit") != "none"
        self.path_parameters = re.findall(r"{(\w+)}", path)
        self.resource_type = spec.get("x-audit-resource") or _resource_type(path)
        self.takes_workspace = any(p.get("name") == "workspaceId" and p.get("in") == "query"
                                   for p in spec.get("parameters", []))
        self.forgets_workspace = spec.get("x-audit-workspace") == "deleted"
        # A body of personal data (a call's report) is summarised by its field names only: the log
        # outlives the calls that retention deletes.
        self.names_only = spec.get("x-audit-changes") == "names"
        # The change commits in batches of its own: the entry cannot share its transaction.
        self.own_transaction = spec.get("x-audit-transaction") == "own"
        # Who acted, for an operation that admits nobody: an invitation's acceptance or a sign-in,
        # which name in their result the user and the access token they made, or a single-use
        # token's redemption, the token itself the credential (x-audit-actor names the kind).
        self.anonymous_actor = spec.get("x-audit-actor", "invitation")

    def start(self) -> dict | None:
        """Before the handler: where its ``note()``s go (each request runs in a context of its own)."""
        if not self.audited:
            return None
        notes: dict = {}
        _notes.set(notes)
        return notes

    def record(self, notes: dict | None, principal: Principal | None, kwargs: dict, returned) -> None:
        """Record the entry of a call that returned ``returned``, in the transaction of its change;
        ``notes`` is what ``start`` gave. Raises what the write raised."""
        if notes is not None:
            self._record(notes, principal, kwargs, returned)

    def finish(self, notes: dict | None, principal: Principal | None, kwargs: dict, returned) -> None:
        """``record`` once the change has committed: an entry that cannot be written is logged with
        the request id, and the client still gets its answer (a 500 would make it retry what was done)."""
        try:
            self.record(notes, principal, kwargs, returned)
        except Exception:
            log.exception("the audit entry of %s could not be written (request %s)", self.operation_id, request_id())

    def _record(self, notes: dict, principal: Principal | None, kwargs: dict, returned) -> None:
        result, status = _result(returned)
        if status >= 400:
            return
        body = kwargs.get("body") if isinstance(kwargs.get("body"), dict) else {}
        fields = {**body, **{k: v for k, v in kwargs.items() if k not in _NOT_CHANGES and k not in self.path_parameters}}
        changes = {"fields": sorted(fields)} if self.names_only else audit_log.summarize(fields)
        changes.update(audit_log.summarize(notes))
        actor = _actor(principal, result, self.anonymous_actor)
        resource_id = (kwargs.get(self.path_parameters[-1]) if self.path_parameters else None) or _id_in(result)
        if self.forgets_workspace:
            log.info("audit: %s by user %s (credential %s) of workspace %s, request %s", self.operation_id,
                     actor.user_id, actor.credential_id, kwargs.get("workspaceId"), request_id())
            return
        audit_log.record(workspace_ids=self._workspaces(kwargs, result, actor), actor=actor,
                     operation_id=self.operation_id, resource_type=self.resource_type, resource_id=resource_id,
                     changes=changes, request_id=request_id(), source_address=_source_address())

    def _workspaces(self, kwargs: dict, result, actor: audit_log.Actor) -> list[str]:
        if self.takes_workspace and kwargs.get("workspaceId"):
            return [kwargs["workspaceId"]]
        if isinstance(result, dict):
            named = result.get("workspaceId") or (result.get("workspace") or {}).get("id")
            if named:
                return [named]
        if actor.user_id is None:
            return []
        return [w for (w,) in Membership.select(Membership.workspace).where(Membership.user == actor.user_id).tuples()]


def _resource_type(path: str) -> str:
    """/api-keys/{apiKeyId} → api-keys; /webhooks/subscriptions/{id}/rotate-secret →
    webhooks/subscriptions; /workspaces → workspaces."""
    segments = path.strip("/").split("/")
    last_parameter = max((i for i, s in enumerate(segments) if s.startswith("{")), default=None)
    fixed = [s for s in (segments if last_parameter is None else segments[:last_parameter]) if not s.startswith("{")]
    return "/".join(fixed) or "/"


def _result(returned) -> tuple[object, int]:
    if isinstance(returned, tuple) and returned and isinstance(returned[0], dict):
        status = returned[1] if len(returned) > 1 and isinstance(returned[1], int) else 200
        return (returned[0].get("data") or {}).get("result"), status
    return None, getattr(returned, "status_code", 200)


def _id_in(result) -> str | None:
    """The id of what an operation made: ``result.id``, or the ``id`` of the first object in it."""
    if not isinstance(result, dict):
        return None
    if isinstance(result.get("id"), (str, int)):
        return str(result["id"])
    for value in result.values():
        if isinstance(value, dict) and isinstance(value.get("id"), (str, int)):
            return str(value["id"])
    return None


def _actor(principal: Principal | None, result, kind: str) -> audit_log.Actor:
    if principal is not None:
        return audit_log.Actor(principal.user_id, principal.credential_id, principal.kind)
    result = result if isinstance(result, dict) else {}
    # A single-use token spent by the request (tokenId): no user, the token its credential.
    credential = (result.get("accessToken") or {}).get("id") or result.get("tokenId")
    return audit_log.Actor((result.get("user") or {}).get("id"), credential, kind)


def _source_address() -> str | None:
    try:
        client = context.scope.get("client")
    except (LookupError, RuntimeError):
        return None
    return client[0] if client else None
