"""Builds the management API: the OpenAPI contract, connexion's middleware with ours in it, the
database binding, and the error mapping."""
from __future__ import annotations

import functools
import inspect
import logging
import re
from importlib import import_module
from pathlib import Path

import yaml
from connexion import AsyncApp, context
from connexion.datastructures import MediaTypeDict
from connexion.exceptions import ProblemException
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.resolver import Resolution, Resolver
from connexion.validators import VALIDATOR_MAP
from starlette.exceptions import HTTPException

from models.db import database, open_database
from models.errors import DomainError
from models.migrations import migrate

from . import envelope
from .authorization import PRINCIPAL, AuthorizationMiddleware
from .body_limit import BodyLimitMiddleware
from .request_context import RequestContextMiddleware
from .settings import Settings

SPEC_DIR = Path(__file__).resolve().parent.parent / "openapi"
SPEC_FILE = "management.yaml"
BASE_PATH = "/api/v2"


class HandlerResolver(Resolver):
    """operationId ``createApiKey`` in ``x-openapi-router-controller: handlers.api_keys`` resolves to
    ``handlers.api_keys.create_api_key``, run with a database connection of its own thread."""

    def resolve(self, operation) -> Resolution:
        module = import_module(operation.router_controller)
        handler = getattr(module, re.sub(r"(?<!^)(?=[A-Z])", "_", operation.operation_id).lower())
        return Resolution(_with_connection(handler), operation.operation_id)


def _with_connection(handler):
    wants_principal = PRINCIPAL in inspect.signature(handler).parameters

    @functools.wraps(handler)
    def call(*args, **kwargs):
        if wants_principal:
            kwargs[PRINCIPAL] = context.context[PRINCIPAL]
        with database.connection_context():
            return handler(*args, **kwargs)

    return call


def _middlewares(settings: Settings) -> list:
    stack = []
    for middleware in ConnexionMiddleware.default_middlewares:
        if middleware is SecurityMiddleware:
            stack.append(functools.partial(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes))
            stack.append(functools.partial(AuthorizationMiddleware, settings=settings))
        else:
            stack.append(middleware)
    return stack


def create_app(settings: Settings | None = None, *, migrate_schema: bool = True):
    """The ASGI app; ``uvicorn api.app:create_app --factory`` serves it."""
    settings = settings or Settings.from_env()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    open_database(settings.database_url, settings.data_dir, settings.db_pool_size)
    if migrate_schema:
        with database.connection_context():
            migrate()
    app = AsyncApp(__name__, specification_dir=str(SPEC_DIR), middlewares=_middlewares(settings))
    app.add_api(SPEC_FILE, base_path=BASE_PATH, resolver=HandlerResolver(), strict_validation=True,
                validator_map={"parameter": envelope.NamedParameterValidator,
                               "body": MediaTypeDict({**VALIDATOR_MAP["body"], "*/*json": envelope.JSONBodyValidator})})
    app.add_error_handler(DomainError, envelope.domain_error)
    app.add_error_handler(ProblemException, envelope.problem)
    paths = yaml.safe_load((SPEC_DIR / SPEC_FILE).read_text())["paths"]
    app.add_error_handler(HTTPException, functools.partial(
        envelope.http_exception, allowed_methods=envelope.methods_by_path(paths, BASE_PATH)))
    app.add_error_handler(Exception, envelope.unexpected)
    return RequestContextMiddleware(app)
