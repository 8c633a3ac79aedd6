"""Admission of a request, shared by both servers: who is calling, may it call now, may it do this."""
from __future__ import annotations

from collections.abc import Callable

from models.identity.credentials import authenticate_and_count
from models.identity.principal import Principal
from models.identity.rate_limits import Policy, address_counter, consume
from models.kernel.errors import Forbidden, InvalidInput, RateLimited, Unauthenticated
from models.kernel.text import text_problem
from models.webhooks.signing_secrets import verify


def admit(secret: str, *, policy: Policy, workspace_id: str | None = None, permission: str | None = None,
          report: Callable[[dict[str, str]], None] | None = None) -> Principal:
    """Authenticate ``secret``, count the request against its rate limit, and check ``permission``.

    ``report`` receives the rate-limit headers once the request is admitted, so a refusal that
    follows (403 for a missing permission, 400 from validation) carries them too; a 429 carries
    its own. Raises Unauthenticated
    or Forbidden (see ``authenticate``), RateLimited, InvalidInput. Runs inside the caller's
    ``session()``: on the common path one statement on PostgreSQL, the credential and its
    rate-limit count together, and two on SQLite (models.identity.credentials).
    """
    # Both servers read the workspace (from the query, or a body that names it) before any
    # validation of theirs (PostgreSQL cannot even compare text holding NUL): the rule every
    # request string meets, applied here for both.
    if workspace_id is not None and (problem := text_problem(workspace_id)) is not None:
        raise InvalidInput(f"Invalid value for workspaceId: {problem}.")
    principal, decision = authenticate_and_count(secret, workspace_id=workspace_id, policy=policy)
    _report(decision, report)
    if permission is not None:
        require(principal, permission)
    return principal


# What a webhook signed with a workspace's signing secret may do: deliver reports, nothing else.
SIGNED_PERMISSIONS = frozenset({"calls:webhook-payload"})


def admit_signed(body: bytes, headers: dict[str, str], *, policy: Policy, workspace_id: str | None,
                 permission: str | None = None, report: Callable[[dict[str, str]], None] | None = None) -> Principal:
    """``admit`` for a webhook signed with ``workspace_id``'s signing secret (models.webhooks.signing_secrets)
    instead of a bearer credential. Its requests count against the platform's default limit, one
    count per workspace however its secret rotates."""
    if workspace_id is None:
        raise InvalidInput("workspaceId is required: name the workspace whose signing secret signed the webhook.")
    if (problem := text_problem(workspace_id)) is not None:
        raise InvalidInput(f"Invalid value for workspaceId: {problem}.")
    secret = verify(workspace_id, body, headers)
    principal = Principal(credential_id=secret.id, kind="signing_secret", user_id=secret.created_by,
                          workspace_id=workspace_id, permissions=SIGNED_PERMISSIONS, webhook_id=headers["webhook-id"])
    _count(f"webhook-signing:{workspace_id}", policy.limit_for(None), report)
    if permission is not None:
        require(principal, permission)
    return principal


def admit_anonymous(address: str | None, *, policy: Policy,
                    report: Callable[[dict[str, str]], None] | None = None) -> None:
    """Count a request that carries no credential (accepting an invitation) against the limit of
    its client ``address`` (an IPv6 one by its /64: rate_limits.address_counter); RateLimited past
    it. Runs inside the caller's ``session()``: one statement."""
    _count(address_counter(address), policy.anonymous_limit(), report)


def _count(counter: str, limit, report) -> None:
    _report(consume(counter, limit) if limit else None, report)


def _report(decision, report) -> None:
    if decision is not None:
        if not decision.allowed:
            raise RateLimited(f"Rate limit of {decision.limit} requests exceeded; retry in {decision.reset_s} s.",
                              headers=decision.headers())
        if report is not None:
            report(decision.headers())


def require(principal: Principal, permission: str) -> None:
    """Forbidden naming ``permission`` unless the principal holds it in the workspace it acts in."""
    if principal.workspace_id is None:
        raise InvalidInput("workspaceId is required: name the workspace this request acts in.")
    if permission not in principal.permissions:
        raise Forbidden(f"This needs the permission {permission}, which the caller does not have.")


def bearer_secret(authorization: str | None) -> str:
    """The secret of an ``Authorization: Bearer <secret>`` header value; Unauthenticated otherwise."""
    if not authorization:
        raise Unauthenticated("Authorization: Bearer <access token or API key> is required.")
    scheme, _, secret = authorization.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Unauthenticated("The Authorization header must be 'Bearer <access token or API key>'.")
    return secret.strip()
