"""The one authorization step every operation goes through, in connexion's security slot.

For each request: the bearer credential (401), the workspace named in the query (403), the rate
limit (429), then the operation's ``x-permission`` against the caller's effective set (403). An
operation without a credential (``security: []``: accepting an invitation) has only the rate limit,
of the client address (``AnonymousAdmission``): each request is a guess at a token, so none goes
uncounted. The client address is the ASGI scope's, which uvicorn takes from X-Forwarded-For only
for a peer in FORWARDED_ALLOW_IPS (api.serve).

It costs no database session of its own: the middleware only reads the header and the query and
leaves an ``Admission`` in the request's context, which runs in the handler's session, before the
handler (see api.app). When something refuses the request before the handler is reached (request
validation, 400), the middleware runs the admission on the way out, so a bad credential still
gets 401 rather than 400, and every request counts against its rate limit once.

An operation whose ``security`` also lists ``webhookSignature`` (the end-of-call-report webhook)
accepts, in place of a bearer credential, a body signed with the workspace's signing secret
(models.webhooks.signing_secrets). The signature covers the raw bytes, which connexion parses before the
handler runs: the middleware keeps a copy of the body as it passes by (within the body limit),
and the admission verifies that copy.

An operation that says ``x-workspace-from-body: <field>`` (the end-of-call-report, whose sender
posts only its JSON body) may leave ``workspaceId`` out of the query: the admission then reads the
workspace from that field of the body, copied the same way (the body is read, and validated, before
the admission runs). A query that is given must match the body; the handler checks that.

Every response to an operation carries ``Cache-Control: no-store``: it is the caller's own (one
carries a new key's secret, another a new access token), so no browser or proxy cache may keep it.
"""
from __future__ import annotations

from urllib.parse import parse_qs

import orjson
from connexion.middleware.abstract import RoutedAPI, RoutedMiddleware
from connexion.operations import AbstractOperation
from starlette.types import ASGIApp, Receive, Scope, Send

from core.settings import Settings
from models.identity.access import admit, admit_anonymous, admit_signed, bearer_secret
from models.identity.principal import Principal
from models.identity.rate_limits import Policy
from models.kernel.db import session
from models.kernel.errors import InvalidInput

from .contract import PermissionRule
from .request_context import add_response_headers, note_credential

ADMISSION = "admission"
SIGNATURE_SCHEME = "webhookSignature"
SIGNATURE_HEADERS = (b"webhook-id", b"webhook-timestamp", b"webhook-signature")
NO_STORE = {"Cache-Control": "no-store"}


class Admission:
    """The authorization of one request, run at most once, in whichever thread gets to it first.
    ``workspace_id`` may be a ``BodyField``, read when the admission runs."""

    def __init__(self, secret: str, workspace_id, permission: str | None, policy: Policy) -> None:
        self.secret, self._workspace_id, self.permission, self.policy = secret, workspace_id, permission, policy
        self.ran = False

    @property
    def workspace_id(self) -> str | None:
        workspace = self._workspace_id
        return workspace.value() if isinstance(workspace, BodyField) else workspace

    def run(self) -> Principal:
        """The caller, or the domain's Unauthenticated, Forbidden, RateLimited, InvalidInput.
        Call it inside a ``session()``."""
        self.ran = True
        principal = admit(self.secret, policy=self.policy, workspace_id=self.workspace_id,
                          permission=self.permission, report=add_response_headers)
        note_credential(principal.credential_id)
        return principal

    def run_in_session(self) -> Principal:
        with session():
            return self.run()


class SignedAdmission(Admission):
    """The admission of a webhook signed with its workspace's signing secret; ``body`` fills as the
    request's body is read, which happens before the handler (or the 400 that stops it)."""

    def __init__(self, body: bytearray, headers: dict[str, str], workspace_id, permission: str | None,
                 policy: Policy) -> None:
        super().__init__("", workspace_id, permission, policy)
        self.body, self.headers = body, headers

    def run(self) -> Principal:
        self.ran = True
        principal = admit_signed(bytes(self.body), self.headers, policy=self.policy, workspace_id=self.workspace_id,
                                 permission=self.permission, report=add_response_headers)
        note_credential(principal.credential_id)
        return principal


class AnonymousAdmission(Admission):
    """The admission of a request without a credential: counted against its client address's
    limit. There is no caller to return."""

    def __init__(self, address: str | None, policy: Policy) -> None:
        super().__init__("", None, None, policy)
        self.address = address

    def run(self) -> None:
        self.ran = True
        admit_anonymous(self.address, policy=self.policy, report=add_response_headers)


class BodyField:
    """A string field of the request's JSON body, from the copy the middleware keeps of it."""

    def __init__(self, body: bytearray, name: str) -> None:
        self.body, self.name = body, name

    def value(self) -> str | None:
        try:
            document = orjson.loads(bytes(self.body))
        except orjson.JSONDecodeError:
            return None  # validation refuses the body itself
        value = document.get(self.name) if isinstance(document, dict) else None
        return value if isinstance(value, str) else None


class AuthorizationOperation:
    def __init__(self, next_app: ASGIApp, operation: AbstractOperation, settings: Settings) -> None:
        self.next_app = next_app
        self.secured = bool(operation.security)
        self.signed = any(SIGNATURE_SCHEME in requirement for requirement in operation.security or ())
        self.permission = PermissionRule.of(operation._operation.get("x-permission"))
        self.takes_workspace = any(p.get("in") == "query" and p.get("name") == "workspaceId"
                                   for p in operation.parameters)
        self.workspace_field = operation._operation.get("x-workspace-from-body")
        self.policy = settings.rate_limit_policy()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        add_response_headers(NO_STORE)
        if self.secured:
            admission, receive = self._admission(scope, receive)
        else:
            client = scope.get("client")
            admission = AnonymousAdmission(client[0] if client else None, self.policy)
        scope.setdefault("extensions", {}).setdefault("connexion_context", {})[ADMISSION] = admission
        try:
            await self.next_app(scope, receive, send)
        except Exception:
            if not admission.ran:
                # Refused before the handler: the credential's verdict comes first, and the
                # request counts against its limit all the same.
                admission.run_in_session()
            raise

    def _admission(self, scope: Scope, receive: Receive) -> tuple[Admission, Receive]:
        """The admission of a request with a credential, and the ``receive`` that keeps a copy of
        the body where the admission reads it."""
        permission = self.permission.for_path(scope.get("path_params") or {})
        headers = dict(scope.get("headers") or ())
        signed = self.signed and b"authorization" not in headers and b"webhook-signature" in headers
        workspace = self._workspace(scope)
        from_body = workspace is None and self.workspace_field is not None
        if signed or from_body:  # the body is kept as it passes by only where the admission reads it
            body = bytearray()
            receive = _copying(receive, body)
            if from_body:
                workspace = BodyField(body, self.workspace_field)
        if signed:
            return SignedAdmission(body, {name.decode(): headers.get(name, b"").decode("latin-1")
                                          for name in SIGNATURE_HEADERS},
                                   workspace, permission, self.policy), receive
        return Admission(_bearer(headers), workspace, permission, self.policy), receive

    def _workspace(self, scope: Scope) -> str | None:
        if not self.takes_workspace:
            return None
        values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("workspaceId", [])
        # The handler must act in the very workspace checked here, so there must be only one.
        if len(values) > 1:
            raise InvalidInput("workspaceId must be given once.")
        return values[0] if values else None


def _bearer(headers: dict[bytes, bytes]) -> str:
    header = headers.get(b"authorization")
    return bearer_secret(header.decode("latin-1") if header else None)


def _copying(receive: Receive, body: bytearray) -> Receive:
    async def copying_receive():
        message = await receive()
        if message["type"] == "http.request":
            body.extend(message.get("body", b""))
        return message

    return copying_receive


class AuthorizationAPI(RoutedAPI[AuthorizationOperation]):
    def __init__(self, *args, settings: Settings, **kwargs) -> None:
        self.settings = settings
        super().__init__(*args, **kwargs)
        self.add_paths()

    def make_operation(self, operation: AbstractOperation) -> AuthorizationOperation:
        return AuthorizationOperation(self.next_app, operation, self.settings)


class AuthorizationMiddleware(RoutedMiddleware[AuthorizationAPI]):
    api_cls = AuthorizationAPI

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        super().__init__(app)
        self.settings = settings

    def add_api(self, specification, **kwargs) -> AuthorizationAPI:
        return super().add_api(specification, settings=self.settings, **kwargs)
