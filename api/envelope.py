"""The response envelope {success, data: {message, result}}, and the mapping of every error to it."""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable

import orjson
from connexion.jsonifier import Jsonifier

from connexion.exceptions import BadRequestProblem, ProblemException, UnsupportedMediaTypeProblem
from connexion.validators import JSONRequestBodyValidator, ParameterValidator
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from starlette.exceptions import HTTPException
from starlette.routing import compile_path

from models.errors import DomainError

from .request_context import request_id

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


class FastJsonifier(Jsonifier):
    """Connexion's response serializer on orjson: a page of 20 API keys (150 permissions each, 44 KB)
    encodes in a sixth of the time the json module takes, on every list request."""

    def dumps(self, data, **kwargs) -> str:
        return orjson.dumps(data).decode() + "\n"


def ok(result, message: str = "OK", status: int = 200):
    """What a handler returns: the success envelope and its status."""
    return {"success": True, "data": {"message": message, "result": result}}, status


def error_response(status: int, message: str, headers: dict | None = None, result=None) -> ConnexionResponse:
    body = {"success": False, "data": {"message": message, "result": result}}
    return ConnexionResponse(
        status_code=status, mimetype="application/json", content_type="application/json",
        body=orjson.dumps(body), headers=headers or {},
    )


def domain_error(_request: ConnexionRequest, exc: DomainError) -> ConnexionResponse:
    return error_response(exc.status, exc.message, exc.headers)


def problem(request: ConnexionRequest, exc: ProblemException) -> ConnexionResponse:
    return error_response(exc.status, _problem_message(request, exc.status, exc.detail), exc.headers)


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
    log.error("unhandled error in %s %s [request %s]", request.method, request.url.path, rid, exc_info=exc)
    return error_response(500, f"Internal server error; quote request id {rid} when reporting it.")


def _problem_message(request: ConnexionRequest, status: int, detail: str | None) -> str:
    if status == 404 and not detail or detail == "Not Found":
        return f"No route for {request.method} {request.url.path}."
    if status == 405:
        return f"Method {request.method} is not allowed on {request.url.path}."
    if not detail or detail in ("Bad Request", "Unauthorized", "Forbidden", "Method Not Allowed"):
        return _DEFAULT_MESSAGES.get(status, "Request failed.")
    if status == 400:
        return _validation_message(detail)
    if status == 415:
        return f"Unsupported media type: {detail}"
    return detail


class NamedParameterValidator(ParameterValidator):
    """Connexion's parameter validator, with messages that name the parameter they are about."""

    @staticmethod
    def validate_parameter(parameter_type, value, param, param_name=None):
        if _has_nul(value):
            # Said in words, without echoing the value (see the contract's Id schema).
            return f"Invalid value for {parameter_type} parameter {param['name']}: must not contain a NUL character."
        error = ParameterValidator.validate_parameter(parameter_type, value, param, param_name)
        if error is None or error.startswith("Missing"):
            return error
        return f"Invalid value for {parameter_type} parameter {param['name']}: {error.splitlines()[0]}"


class JSONBodyValidator(JSONRequestBodyValidator):
    """Connexion's JSON body validator, refusing a body its charset cannot decode instead of failing."""

    async def _parse(self, stream, scope):
        raw = b"".join([chunk async for chunk in stream])
        try:
            body = raw.decode(self._encoding)
        except LookupError:
            raise UnsupportedMediaTypeProblem(detail=f"the charset {self._encoding!r} is not supported.") from None
        except UnicodeDecodeError as exc:
            raise BadRequestProblem(
                detail=f"The request body is not valid {self._encoding}: {exc.reason} at byte {exc.start}.") from None
        if not body:
            return None
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError as exc:
            raise BadRequestProblem(detail=str(exc)) from None
        except RecursionError:
            raise BadRequestProblem(detail="The request body is nested too deeply.") from None
        return parsed


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


_ENUM = re.compile(r" is not one of \[.*\]", re.S)
_NUL_RULE = re.compile(r"'(?:[^'\\]|\\.)*' does not match '\^\[\^\\\\x00\]\+\$'", re.S)


def _validation_message(detail: str) -> str:
    if detail.startswith(("Invalid value for", "Missing", "Wrong type", "Extra ", "The request body")):
        return detail if detail.endswith(".") else detail + "."
    if re.search(r"line \d+ column \d+ \(char \d+\)$", detail):
        return f"The request body is not valid JSON: {detail}."
    # Enum messages list every allowed value (150 for permissions); name the rule instead.
    detail = _ENUM.sub(" is not one of the allowed values", detail)
    # The contract's rule against NUL (see components/schemas.yaml), said in words, without the value.
    detail = _NUL_RULE.sub("must not contain a NUL character", detail)
    # jsonschema says "'x' is too short - 'name'": lead with the field the rule applies to.
    match = re.fullmatch(r"(.*) - '([^']*)'", detail, re.S)
    if match:
        return f"Invalid value for {match.group(2)}: {match.group(1)}."
    return f"Invalid request: {detail}"
