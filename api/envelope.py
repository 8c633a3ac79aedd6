"""The response envelope {success, data: {message, result}}, and the mapping of every error to it.

An error's ``data`` also carries ``code``, one of a fixed list (the contract's ErrorCode): a domain
error's is its class's (models.kernel.errors), the framework's own refusals' is their status's
(``STATUS_CODES``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import orjson
from connexion.exceptions import ProblemException
from connexion.jsonifier import Jsonifier
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from starlette.exceptions import HTTPException
from starlette.routing import compile_path

from models.kernel.errors import (
    DomainError,
    Forbidden,
    InvalidInput,
    NotFound,
    RateLimited,
    Unauthenticated,
    Unavailable,
    UnsupportedMediaType,
)

from .request_context import request_id
from .validation import shorten_name, validation_message

log = logging.getLogger("api.errors")

_DEFAULT_MESSAGES = {
    400: "The request is not valid.",
    401: "Authorization: Bearer <access token or API key> is required.",
    403: "The caller is not allowed to do this.",
    404: "No such resource or path.",
    405: "This method is not allowed on this path.",
    413: "The request body is too large.",
    415: "The request body must be application/json.",
    429: "Too many requests.",
}


# The code of a refusal that is no domain error (connexion's validation, routing, the body limit),
# by its status: the domain's kind of that status where there is one, so that both say the same;
# any other status is answered as "internal" would be, which no test lets happen.
STATUS_CODES = {
    **{kind.status: kind.code for kind in (InvalidInput, Unauthenticated, Forbidden, NotFound, UnsupportedMediaType,
                                           RateLimited, Unavailable)},
    405: "method_not_allowed",
    408: "request_timeout",
    413: "payload_too_large",
    500: "internal",
}

# Codes of refusals that no status names alone: a request that is not HTTP (api.http_protocol) and a
# cross-origin preflight refused (api.cross_origin).
MALFORMED_REQUEST = "malformed_request"
ORIGIN_NOT_ALLOWED = "origin_not_allowed"
OTHER_CODES = (MALFORMED_REQUEST, ORIGIN_NOT_ALLOWED)


class FastJsonifier(Jsonifier):
    """Connexion's response serializer on orjson: a page of 20 API keys (150 permissions each, 44 KB)
    encodes in a sixth of the time the json module takes, on every list request."""

    def dumps(self, data, **kwargs) -> str:
        return orjson.dumps(data).decode() + "\n"


def ok(result, message: str = "OK", status: int = 200):
    """What a handler returns: the success envelope and its status."""
    return {"success": True, "data": {"message": message, "result": result}}, status


def error_body(status: int, message: str, code: str | None = None, result=None) -> bytes:
    """The error envelope's bytes, for the layers that answer before connexion (or without it);
    ``code`` defaults to the status's (``STATUS_CODES``)."""
    return orjson.dumps({"success": False, "data": {
        "message": message, "code": code or STATUS_CODES.get(status, "internal"), "result": result}})


def error_response(status: int, message: str, headers: dict | None = None, result=None,
                   code: str | None = None) -> ConnexionResponse:
    return ConnexionResponse(
        status_code=status, mimetype="application/json", content_type="application/json",
        body=error_body(status, message, code, result), headers=headers or {},
    )


def domain_error(request: ConnexionRequest, exc: DomainError) -> ConnexionResponse:
    if exc.status >= 500:
        # The server could not serve (the database is down or every connection stayed busy): the
        # client is told to retry; the operator is told why, under the request's id.
        log.warning("%s %s answered %d [request %s]: %s", request.method, shorten_name(request.url.path), exc.status,
                    request_id(), _one_line(exc.__cause__) if exc.__cause__ else exc.message)
    return error_response(exc.status, exc.message, exc.headers, exc.result, exc.code)


def _one_line(exc: BaseException) -> str:
    # Drivers' messages run over several lines (psycopg2 adds a hint on the next).
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def problem(request: ConnexionRequest, exc: ProblemException) -> ConnexionResponse:
    message = _problem_message(request, exc.status, exc.detail)
    if exc.status == 400:
        log.info("%s %s refused [request %s]: %s", request.method, shorten_name(request.url.path), request_id(), message)
    return error_response(exc.status, message, exc.headers)


def http_exception(request: ConnexionRequest, exc: HTTPException,
                   allowed_methods: Callable[[str], list[str]] | None = None) -> ConnexionResponse:
    detail = exc.detail if isinstance(exc.detail, str) else None
    headers = exc.headers
    if exc.status_code == 405 and allowed_methods and (methods := allowed_methods(request.url.path)):
        headers = {**(headers or {}), "Allow": ", ".join(methods)}
    return error_response(exc.status_code, _problem_message(request, exc.status_code, detail), headers)


def methods_by_path(operations, base_path: str) -> Callable[[str], list[str]]:
    """The methods the contract defines on the path a request URL matches, for the Allow header.

    Connexion routes each operation separately, so Starlette's own 405 lists only the methods of
    the first route whose path matched.
    """
    by_path: dict[str, set[str]] = {}
    for operation in operations:
        by_path.setdefault(operation.path, set()).add(operation.method.upper())
    table = []
    for template, methods in by_path.items():
        if "GET" in methods:
            methods.add("HEAD")  # Starlette answers HEAD on every GET route
        table.append((compile_path(base_path + template)[0], sorted(methods)))

    def lookup(path: str) -> list[str]:
        return next((methods for regex, methods in table if regex.match(path)), [])

    return lookup


def unexpected(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    rid = request_id()
    log.error("unhandled error in %s %s [request %s]", request.method, shorten_name(request.url.path), rid,
              exc_info=exc)
    return error_response(500, f"Internal server error; quote request id {rid} when reporting it.")


def _problem_message(request: ConnexionRequest, status: int, detail: str | None) -> str:
    if status == 404 and not detail or detail == "Not Found":
        return f"No route for {request.method} {shorten_name(request.url.path)}."
    if status == 405:
        return f"Method {request.method} is not allowed on {shorten_name(request.url.path)}."
    if not detail or detail in ("Bad Request", "Unauthorized", "Forbidden", "Method Not Allowed"):
        return _DEFAULT_MESSAGES.get(status, "Request failed.")
    if status == 400:
        return validation_message(detail)
    return detail
