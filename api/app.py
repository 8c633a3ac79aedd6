"""Builds the management API: the contract, connexion's middleware with ours in it, the error mapping.

The path of a request: RequestContextMiddleware (request id, access log, metrics) → GET /health
(answered there: api.health) → GET /metrics (answered there: api.metrics) → CrossOriginMiddleware
(only when CORS_ORIGINS names origins) → StaticPathMethods (405 on a fixed path a templated one
shadows) → connexion's routing (among the operations of the path's first segment:
api.route_index) → BodyLimitMiddleware (413) →
AuthorizationMiddleware (the bearer and the workspace, read from the request) → connexion's
validation with ours (400: api.validation) → connexion's handler pipeline, made once per
operation (api.handler_pipeline: the arguments cast and passed, the answer serialized) → in one
database session (models.kernel.db: on SQLite the thread's own connection, on PostgreSQL one from the
pool), the admission (401, 403, 429: see api.authorization) and then the handler named by the
operationId.

Where the handler runs: on the event loop, without a hop to a worker thread. A handler runs a
few bounded statements of our own database, and a hop costs more than they do: the thread must
win the GIL back from the loop after every statement, and under load that wait, not SQL, set the
pace (GET /permissions on SQLite at 16 connections: about 1,300 req/s on the loop, 850 with the hop;
scripts/bench_api). While it runs, the process serves nothing else, as a synchronous worker would:
throughput comes from WORKERS processes. Nor does it accept connections: uvloop accepts one
waiting connection per turn of the loop (libuv since 1.45), and a turn runs every request then
ready, so under load a burst of new connections waits several turns for its first answer, where
kept-alive ones do not (scripts/bench_api measures on kept-alive connections for that reason).
Which of several workers accepts a connection is a race, and it stays there: api.connection_balance
moves connections off a worker that holds more than its share.
An operation whose handler may wait on something else (a DNS lookup, a purge in many batches)
says ``x-in-thread: true`` in the contract and runs in a worker thread (at most API_THREADS at
once), so the loop goes on meanwhile. An upload's handler
is async: it reads its body on the event loop and hops to threads for SQL.
The lifespan starts the threads that transcribe uploaded recordings (api.transcription_worker)
and those that deliver outbound webhooks (api.webhook_worker).
A database that cannot serve is answered 503 with Retry-After (models.kernel.db ``Unavailable``).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from importlib import import_module

import anyio.to_thread
from connexion import AsyncApp, context
from connexion.exceptions import ProblemException
from connexion.frameworks import starlette as connexion_starlette
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.main import API as ConnexionAPI
from connexion.middleware.request_validation import RequestValidationMiddleware
from connexion.middleware.routing import RoutingMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.resolver import Resolution, Resolver
from connexion.validators import VALIDATOR_MAP
from starlette.exceptions import HTTPException

from core import request_log
from core.boot import boot
from core.settings import Settings
from models.kernel.db import session, unit_of_work
from models.kernel.errors import DomainError

from . import contract, envelope
from .audit_trail import AuditedOperation
from .authorization import ADMISSION, AuthorizationMiddleware
from .body_limit import BodyLimitMiddleware
from .cross_origin import cross_origin
from .export_worker import ExportWorkers
from .handler_pipeline import ApiDecoratedOnce
from .health import HealthEndpoint
from .metrics import MetricsEndpoint
from .request_context import RequestContextMiddleware
from .optimization_worker import OptimizationWorkers
from .simulation_worker import SimulationWorkers
from .retention_worker import RetentionWorker
from .route_index import IndexedRoutingMiddleware
from .served_contract import ServedContractMiddleware
from .static_paths import StaticPathMethods
from .transcription_worker import TranscriptionWorkers
from .validation import BodyValidators, JSONBodyValidator, NamedParameterValidator, ValidationMiddleware
from .sync_worker import SyncWorkers
from .webhook_worker import WebhookWorkers

# Every path parameter routes as text, whatever its type: connexion's typed route converters would
# answer 404 to /insights/abc, where the contract's validation answers 400 naming the parameter.
connexion_starlette.PATH_PARAMETER_CONVERTERS = {"path": "path"}


PRINCIPAL = "principal"


_RESOLVED: dict[tuple[str, str], Resolution] = {}


class HandlerResolver(Resolver):
    """operationId ``createApiKey`` in ``x-openapi-router-controller: handlers.identity.api_keys`` resolves to
    ``handlers.identity.api_keys.create_api_key``, run after the request's admission in one database
    session, on the event loop or, marked ``x-in-thread: true``, in a worker thread; a handler
    that names a ``principal`` parameter gets the caller."""

    def resolve(self, operation) -> Resolution:
        # Each of connexion's middlewares resolves every operation again, and each app of a process
        # (a test's) anew: the resolution depends on the contract alone, which a process holds once.
        key = (operation.router_controller, operation.operation_id)
        if key not in _RESOLVED:
            _RESOLVED[key] = self._resolve(operation)
        return _RESOLVED[key]

    @staticmethod
    def _resolve(operation) -> Resolution:
        module = import_module(operation.router_controller)
        handler = getattr(module, contract.handler_name(operation.operation_id))
        audited = AuditedOperation(operation.operation_id, operation.method, operation.path,
                                   operation._operation)
        in_thread = contract.Operation(operation.path, operation.method, operation._operation).in_thread
        return Resolution(_in_session(handler, audited, in_thread), operation.operation_id)


def _in_session(handler, audited: AuditedOperation, in_thread: bool):
    """The handler after the admission, and, for a change, its audit entry (api.audit_trail):
    connexion runs a plain function in a worker thread, a coroutine function on the event loop."""
    wants_principal = PRINCIPAL in inspect.signature(handler).parameters
    if inspect.iscoroutinefunction(handler):
        return _admitted_async(handler, wants_principal, audited)

    @functools.wraps(handler)
    def call(*args, **kwargs):
        admission = context.context.get(ADMISSION)
        with session():
            principal = admission.run() if admission is not None else None
            if wants_principal:
                kwargs[PRINCIPAL] = principal
            notes = audited.start()
            if notes is None:
                return handler(*args, **kwargs)
            if audited.own_transaction:
                returned = handler(*args, **kwargs)
                audited.finish(notes, principal, kwargs, returned)
                return returned
            with unit_of_work():
                returned = handler(*args, **kwargs)
                audited.record(notes, principal, kwargs, returned)
            return returned

    if in_thread:
        return call

    @functools.wraps(handler)
    async def on_loop(*args, **kwargs):
        return call(*args, **kwargs)

    return on_loop


def _admitted_async(handler, wants_principal: bool, audited: AuditedOperation):
    """An async handler (one that streams a request body, or waits on a remote host) on the event
    loop, after the admission; it runs its own SQL in worker threads, a session each
    (api/offload.py), so that it holds no connection while it waits."""
    def admit():
        admission = context.context.get(ADMISSION)
        with session():
            return admission.run() if admission is not None else None

    def finish(notes, principal, kwargs, returned):
        with session():
            audited.finish(notes, principal, kwargs, returned)

    @functools.wraps(handler)
    async def call(*args, **kwargs):
        principal = admit()
        if wants_principal:
            kwargs[PRINCIPAL] = principal
        notes = audited.start()
        returned = await handler(*args, **kwargs)
        finish(notes, principal, kwargs, returned)
        return returned

    return call


def _middlewares(settings: Settings) -> list:
    stack = []
    for middleware in ConnexionMiddleware.default_middlewares:
        if middleware is SecurityMiddleware:
            stack.append(functools.partial(
                BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes,
                max_upload_bytes=settings.max_recording_bytes, body_stall_s=settings.api_body_timeout_s,
                uploads=frozenset(op.operation_id for op in contract.operations() if op.streams_body)))
            stack.append(functools.partial(AuthorizationMiddleware, settings=settings))
        elif middleware is SwaggerUIMiddleware:
            stack.append(ServedContractMiddleware)
        elif middleware is RoutingMiddleware:
            stack.append(IndexedRoutingMiddleware)
        elif middleware is RequestValidationMiddleware:
            stack.append(ValidationMiddleware)
        else:
            stack.append(middleware)
    return stack


def _lifespan(settings: Settings):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        # The worker threads of handlers marked x-in-thread and of async handlers' SQL
        # (see Settings.handler_threads).
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.handler_threads()
        workers = [TranscriptionWorkers(settings), WebhookWorkers(settings), RetentionWorker(settings),
                   OptimizationWorkers(settings), SimulationWorkers(settings), ExportWorkers(settings),
                   SyncWorkers(settings)]
        for group in workers:
            group.start()
        try:
            yield
        finally:
            for group in workers:
                await anyio.to_thread.run_sync(group.stop)
            # Connections are closed by now: the lines left are the last few of this process, which
            # a worker of several may end by the SIGTERM uvicorn raises again once it has shut
            # down, with no chance to flush a batch (core.request_log).
            request_log.write_at_once()

    return lifespan


class _OneOfSeveralMediaTypes(logging.Filter):
    """connexion warns "this operation accepts multiple content types" each time it reads the body
    definition of an operation that takes several (an upload: audio/* or application/octet-stream),
    on every such request, even where it was told the request's type: no fault of anyone's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("this operation accepts multiple content types")


logging.getLogger("connexion.operations.openapi3").addFilter(_OneOfSeveralMediaTypes())


def create_app(settings: Settings | None = None, *, migrate_schema: bool = True):
    """The ASGI app; ``uvicorn api.app:create_app --factory`` serves it."""
    settings = settings or Settings.from_env()
    boot(settings, migrate_schema=migrate_schema)
    app = AsyncApp(__name__, specification_dir=str(contract.SPEC_DIR), middlewares=_middlewares(settings),
                   jsonifier=envelope.FastJsonifier(), lifespan=_lifespan(settings))
    # Each operation's handler pipeline built once, not per request (api.handler_pipeline).
    app._middleware_app.api_cls = ApiDecoratedOnce
    # What app.add_api does, with the contract's specification made once per process
    # (api.contract): given a document, connexion would check it against the OpenAPI schema again.
    middleware = app.middleware
    options = middleware.options.replace(
        resolver=HandlerResolver(), strict_validation=True,
        validator_map={"parameter": NamedParameterValidator,
                       "body": BodyValidators({**VALIDATOR_MAP["body"], "*/*json": JSONBodyValidator})})
    middleware.apis.append(ConnexionAPI(contract.specification(), base_path=contract.BASE_PATH, name=None,
                                        **options.__dict__))
    app.add_error_handler(DomainError, envelope.domain_error)
    app.add_error_handler(ProblemException, envelope.problem)
    app.add_error_handler(HTTPException, functools.partial(
        envelope.http_exception, allowed_methods=envelope.methods_by_path(contract.operations(), contract.BASE_PATH)))
    app.add_error_handler(Exception, envelope.unexpected)
    routed = StaticPathMethods(app, contract.operations(), contract.BASE_PATH)
    served = cross_origin(routed, settings.cors_origins, contract.operations())
    return RequestContextMiddleware(HealthEndpoint(MetricsEndpoint(served)))
