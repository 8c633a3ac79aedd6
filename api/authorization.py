"""The one authorization step every secured operation goes through, in connexion's security slot.

For each request: the bearer credential (401), the workspace named in the query (403), the rate
limit (429), then the operation's ``x-permission`` against the caller's effective set (403).
All of it is one hop to a worker thread and one database session: two statements on the common
path (see models.access). It runs before validation, so an unauthenticated caller learns nothing
of the contract's rules and every request counts against its credential's limit.
"""
from __future__ import annotations

from urllib.parse import parse_qs

from connexion.middleware.abstract import RoutedAPI, RoutedMiddleware
from connexion.operations import AbstractOperation
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from core.settings import Settings
from models.access import admit, bearer_secret, require
from models.db import session
from models.errors import InvalidInput
from models.principal import Principal

from .request_context import add_response_headers

PRINCIPAL = "principal"


class AuthorizationOperation:
    def __init__(self, next_app: ASGIApp, operation: AbstractOperation, settings: Settings) -> None:
        self.next_app = next_app
        self.secured = bool(operation.security)
        self.permission: str | None = operation._operation.get("x-permission")
        self.takes_workspace = any(p.get("in") == "query" and p.get("name") == "workspaceId"
                                   for p in operation.parameters)
        self.policy = settings.rate_limit_policy()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.secured:
            principal = await run_in_threadpool(self._authorize, _bearer(scope), self._workspace(scope))
            context = scope.setdefault("extensions", {}).setdefault("connexion_context", {})
            context[PRINCIPAL] = principal
        await self.next_app(scope, receive, send)

    def _authorize(self, secret: str, workspace_id: str | None) -> Principal:
        with session():
            principal, decision = admit(secret, policy=self.policy, workspace_id=workspace_id)
        if decision is not None:
            add_response_headers(decision.headers())
        if self.permission is not None:
            require(principal, self.permission)
        return principal

    def _workspace(self, scope: Scope) -> str | None:
        if not self.takes_workspace:
            return None
        values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("workspaceId", [])
        # The handler must act in the very workspace checked here, so there must be only one.
        if len(values) > 1:
            raise InvalidInput("workspaceId must be given once.")
        if values and "\x00" in values[0]:
            raise InvalidInput("workspaceId must not contain NUL characters.")
        return values[0] if values else None


def _bearer(scope: Scope) -> str:
    header = dict(scope.get("headers") or ()).get(b"authorization")
    return bearer_secret(header.decode("latin-1") if header else None)


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
