"""Request validation beyond what the contract's schemas check, for every operation alike.

Connexion validates parameters and JSON bodies against the contract; the validators here take its
place (see api.app) and add what no schema states, so that a new operation has it without a line
of its own:

- every string parameter, every string in a JSON body and every field name meets models.kernel.text
  (no control characters, no unpaired surrogates; body strings may hold tab and line breaks),
  and a request that breaks it gets 400 naming the parameter or field, on either database;
- a JSON body nests at most ``MAX_BODY_DEPTH`` containers deep. It is parsed by orjson, which is
  not recursive in Python and stops at 1024 levels by itself; the bound then keeps schema
  validation and error messages, which are recursive, far from Python's recursion limit;
- a pattern's closing ``$`` means the end of the value, as in the ECMA regexes JSON Schema
  speaks, where Python's ``$`` also matches before a final line break (which would let
  "name\n" through a one-line rule);
- a message names the field and the rule and echoes at most a few dozen characters of the value
  (a 20,000-item list is shown as its first items and its length).

Each operation's parameter validator is made once (``ValidationMiddleware``); connexion made it,
with a URI parser, for every request.
"""
from __future__ import annotations

import functools
import json
import re

import orjson
from connexion.exceptions import BadRequestProblem, UnsupportedMediaTypeProblem
from connexion.json_schema import Draft4RequestValidator
from connexion.middleware.request_validation import (
    RequestValidationAPI,
    RequestValidationMiddleware,
    RequestValidationOperation,
)
from connexion.utils import is_null, is_nullable
from connexion.datastructures import MediaTypeDict
from connexion.validators import JSONRequestBodyValidator, ParameterValidator
from jsonschema import Draft4Validator, ValidationError
from jsonschema.validators import extend
from starlette.requests import Request

from models.kernel.text import printable, text_problem

# Containers inside containers. The contract's bodies nest three deep; a configuration document
# of a later group may nest ten. Schema validation recurses about five frames per level.
MAX_BODY_DEPTH = 32
# How much of a client's value a message or log line repeats.
ECHO_CHARS = 40
# The longest sentence a 400 carries (an unknown field's name, an extra parameter's, are quoted).
MAX_MESSAGE_CHARS = 300
# The contract's rule for one-line strings (components/schemas.yaml: Id), said in words.
ONE_LINE_PATTERN = "^[^\\x00-\\x1f\\x7f-\\x9f]+$"


def _ecma_pattern(validator, pattern: str, instance, schema):
    if validator.is_type(instance, "string") and not compiled_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.lru_cache(maxsize=256)
def compiled_pattern(pattern: str) -> re.Pattern:
    """A contract's pattern as the server applies it: a closing ``$`` is the end of the value."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    return re.compile(pattern)


ParameterSchemaValidator = extend(Draft4Validator, {"pattern": _ecma_pattern})
BodySchemaValidator = extend(Draft4RequestValidator, {"pattern": _ecma_pattern})


class NamedParameterValidator(ParameterValidator):
    """Connexion's parameter validator, with messages that name the parameter and shorten its value.
    No parameter carries multi-line text, so none may hold a control character."""

    def validate(self, scope):
        # The values as sent: connexion's own are converted first ("\t7" would be the integer 7).
        sent = Request(scope)
        values = {"query": sent.query_params.getlist, "header": sent.headers.getlist,
                  "path": lambda name: [v] if (v := sent.path_params.get(name.replace("-", "_"))) else []}
        for where, parameters in self.parameters.items():
            for parameter in parameters if where in values else ():
                for value in values[where](parameter["name"]):
                    if (problem := text_problem(value)) is not None:
                        raise BadRequestProblem(detail=f"Invalid value for {where} parameter {parameter['name']}: "
                                                       f"{problem}.")
        super().validate(scope)

    def validate_query_parameter_list(self, request, security_params=None):
        # Sorted, so that a request always gets the same message; each name as a message repeats it.
        extra = super().validate_query_parameter_list(request, security_params=security_params)
        return [shorten_name(name) for name in sorted(extra)]

    @staticmethod
    def validate_parameter(parameter_type, value, param, param_name=None):
        if is_nullable(param) and is_null(value):
            return None
        name = param["name"]
        if value is None:
            return f"Missing {parameter_type} parameter '{name}'" if param.get("required") else None
        try:
            _parameter_validator(param).validate(value)
        except ValidationError as error:
            return f"Invalid value for {parameter_type} parameter {_path(name, error)}: {schema_rule(error)}."
        return None


# A parameter's schema validator, built once: building one costs more than validating with it,
# and every request validates each of its operation's parameters. Keyed by the parameter's
# identity (the contract's parameters live as long as the app), holding the parameter so that
# its id is never reused.
_parameter_validators: dict[int, tuple[dict, Draft4Validator]] = {}


def _parameter_validator(param: dict) -> Draft4Validator:
    known = _parameter_validators.get(id(param))
    if known is None or known[0] is not param:
        known = _parameter_validators[id(param)] = (param, ParameterSchemaValidator(
            param.get("schema", param), format_checker=Draft4Validator.FORMAT_CHECKER))
    return known[1]


class BodyValidators(MediaTypeDict):
    """The body validators by media type, as connexion picks them; NDJSON (``application/x-ndjson``:
    one JSON document per line, a call import) has none, though its name ends in json as JSON's
    types do: its handler reads it line by line, each line standing alone."""

    def __getitem__(self, item):
        if item == "application/x-ndjson":
            raise KeyError(item)
        return super().__getitem__(item)


class JSONBodyValidator(JSONRequestBodyValidator):
    """Connexion's JSON body validator, with the checks above and messages that name the field."""

    async def _parse(self, stream, scope):
        raw = b"".join([chunk async for chunk in stream])
        try:
            text = raw.decode("utf-8")  # the one charset of JSON (RFC 8259); _ValidationOnce refuses others
        except UnicodeDecodeError as exc:
            raise BadRequestProblem(
                detail=f"The request body is not valid UTF-8: {exc.reason} at byte {exc.start}.") from None
        if not text:
            return None
        try:
            body = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise BadRequestProblem(detail=_unparsable(text, exc)) from None
        problem = body_problem(body)
        if problem is not None:
            raise BadRequestProblem(detail=problem)
        return body

    @property
    def _validator(self):
        return BodySchemaValidator(self._schema, format_checker=Draft4Validator.FORMAT_CHECKER)

    def _validate(self, body):
        # Connexion's own logs the whole message, value and all; the envelope logs the short one.
        if not self._nullable and body is None:
            raise BadRequestProblem(detail="The request body must not be empty.")
        try:
            self._validator.validate(body)
        except ValidationError as error:
            where = _path("", error)
            raise BadRequestProblem(detail=f"Invalid value for {where}: {schema_rule(error)}." if where
                                    else f"Invalid request body: {schema_rule(error)}.") from None


def body_problem(body) -> str | None:
    """What makes a parsed JSON body unacceptable whatever its schema says, or None. Walks the
    body without recursion, so that its depth is known before anything recursive sees it."""
    pending = [(body, "", 1)]
    while pending:
        value, where, depth = pending.pop()
        if isinstance(value, dict):
            if depth > MAX_BODY_DEPTH:
                return _too_deep()
            for key, item in value.items():
                if (problem := text_problem(key)) is not None:
                    return f"Invalid field name in {where or 'the request body'}: {problem}."
                pending.append((item, _join(where, key), depth + 1))
        elif isinstance(value, list):
            if depth > MAX_BODY_DEPTH:
                return _too_deep()
            pending.extend((item, _join(where, index), depth + 1) for index, item in enumerate(value))
        elif isinstance(value, str) and (problem := text_problem(value, multiline=True)) is not None:
            return f"Invalid value for {where or 'the request body'}: {problem}."
    return None


def _too_deep() -> str:
    return f"The request body is nested too deeply: at most {MAX_BODY_DEPTH} levels of arrays and objects."


def _unparsable(text: str, exc: orjson.JSONDecodeError) -> str:
    """The message for a body orjson refused. The standard parser reads what orjson will not (an
    escaped unpaired surrogate), and the body's walk then names the field that holds it."""
    try:
        lenient = json.loads(text)
    except RecursionError:
        return _too_deep()
    except ValueError:
        lenient = None
    else:
        if (problem := body_problem(lenient)) is not None:
            return problem
    if "depth" in str(exc) or "recursion" in str(exc):
        return _too_deep()
    return f"The request body is not valid JSON: {exc}."


def _join(where: str, step) -> str:
    step = shorten_name(str(step))
    return f"{where}.{step}" if where else step


def _path(start: str, error: ValidationError) -> str:
    where = start
    for step in error.path:
        where = _join(where, step)
    return where


def schema_rule(error: ValidationError) -> str:
    """The rule a value broke, in jsonschema's words, with the value cut short."""
    if error.validator == "enum":
        return f"{shorten(error.instance)} is not one of the allowed values"
    if error.validator == "not":
        # The contract's description of what is excluded, where jsonschema would quote the schema.
        excluded = error.validator_value.get("description") if isinstance(error.validator_value, dict) else None
        return f"{shorten(error.instance)} is not allowed" + (f": {excluded}" if excluded else "")
    if error.validator == "pattern" and error.validator_value == ONE_LINE_PATTERN:
        return f"{shorten(error.instance)} must be one line, without control characters"
    if error.validator in _LENGTHS:
        size, bound, unit = _LENGTHS[error.validator]
        unit = unit[:-1] if error.validator_value == 1 else unit
        return f"{shorten(error.instance)} is too {size}: {bound} {error.validator_value} {unit}"
    message = error.message
    whole = repr(error.instance)
    if len(whole) > ECHO_CHARS:
        message = message.replace(whole, shorten(error.instance), 1)
    return cap(message)


# jsonschema says "[...] is too long" without the bound; these say it.
_LENGTHS = {"maxLength": ("long", "at most", "characters"), "minLength": ("short", "at least", "characters"),
            "maxItems": ("long", "at most", "items"), "minItems": ("short", "at least", "items")}


def shorten(value) -> str:
    """``repr(value)`` if short; else its start and its size: ``['calls:read', 'cal... (20000 items)``."""
    whole = repr(value)
    if len(whole) <= ECHO_CHARS:
        return whole
    unit = "characters" if isinstance(value, str) else "fields" if isinstance(value, dict) else "items"
    size = f" ({len(value)} {unit})" if isinstance(value, (str, list, dict)) else ""
    return f"{whole[:ECHO_CHARS - 8]}...{size}"


def shorten_name(name: str) -> str:
    """A field's, parameter's or path's name as a message repeats it."""
    return printable(name, ECHO_CHARS)


def cap(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS - 3] + "..."


def validation_message(detail: str) -> str:
    """A 400's message from a validator's detail: the validators above write whole sentences;
    connexion's own ("Wrong type, expected 'integer' for query parameter 'limit'", "Extra query
    parameter(s) limt not in spec") get their full stop, and all are capped in length."""
    if detail == "RequestBody is required":
        return "The request body is required."
    detail = cap(detail)
    return detail if detail.endswith(".") else detail + "."


def uri_parser_of(operation):
    """The URI parser of ``operation`` (its parameters split and typed as its contract says): one
    per operation and layer, made at startup; connexion made one per request in each layer."""
    return operation.uri_parser_class(operation.parameters, operation.body_definition())


class _ValidationOnce(RequestValidationOperation):
    """connexion's validation of one operation's requests, with the parameter validator made when
    the API is added. An operation that takes no body has nothing else to check: connexion would
    read the content type only to find no media type to require and no schema to apply. One that
    takes a body goes through connexion's validation as it is."""

    def __init__(self, next_app, *, operation, **kwargs) -> None:
        super().__init__(next_app, operation=operation, **kwargs)
        self._parameters = self._validator_map["parameter"](
            operation.parameters, uri_parser=uri_parser_of(operation), strict_validation=self.strict_validation,
            security_query_params=self.security_query_params)
        self._takes_body = operation.is_request_body_defined or bool(operation.consumes)
        # The text bodies read here, JSON, CSV and NDJSON alike, are UTF-8 (JSON by RFC 8259; a CSV
        # because a spreadsheet's export can say so, and one charset leaves no guessing).
        self._reads_text = {"application/json", "text/csv", "application/x-ndjson"} & set(operation.consumes)

    async def __call__(self, scope, receive, send):
        if self._takes_body:
            self._require_content_type(scope)
            return await super().__call__(scope, receive, send)
        self._parameters.validate(scope)
        await self.next_app(scope, receive, send)

    def validate_mime_type(self, mime_type: str) -> None:
        try:
            super().validate_mime_type(mime_type)
        except UnsupportedMediaTypeProblem:
            raise UnsupportedMediaTypeProblem(
                detail=f"Content-Type {shorten_name(mime_type)} is not accepted here; send {_accepted(self._operation)}."
            ) from None

    def _require_content_type(self, scope) -> None:
        """A body must say what it is. Connexion would guess the first media type the operation
        accepts and validate the body as such, while the handler, reading the header itself, would
        be given raw bytes; so a body without a Content-Type is refused, on every operation alike.
        A request with no body at all needs none: it is the same as an empty JSON body."""
        headers = scope["headers"]
        declared = next((value for name, value in headers if name.lower() == b"content-type"), None)
        if declared is not None:
            declared = declared.decode("latin-1")
            media = declared.split(";")[0].strip().lower()
            charset = _charset(declared)
            if charset is not None and charset.lower() not in ("utf-8", "utf8") and media in self._reads_text:
                kind = {"text/csv": "A CSV", "application/x-ndjson": "An NDJSON"}.get(media, "A JSON")
                raise UnsupportedMediaTypeProblem(
                    detail=f"{kind} body is UTF-8; the charset '{shorten_name(charset)}' is not read here.")
            return
        if not _has_body(headers):
            # Said as the operation's first concrete media type, so that every layer reads it alike.
            concrete = [media for media in self._operation.consumes if "*" not in media]
            scope["headers"] = [*headers, (b"content-type", concrete[0].encode("latin-1"))]
            return
        raise UnsupportedMediaTypeProblem(
            detail=f"The request has a body but no Content-Type header; send it as {_accepted(self._operation)}.")


def _charset(content_type: str) -> str | None:
    """The charset parameter of a Content-Type (``application/json; charset="utf-8"``), or None."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"')
    return None


def _has_body(headers) -> bool:
    for name, value in headers:
        name = name.lower()
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


def _accepted(operation) -> str:
    """The media types an operation takes, in words: "application/json", "audio/wav or ..."."""
    types = list(operation.consumes)
    return types[0] if len(types) == 1 else ", ".join(types[:-1]) + " or " + types[-1]


class _ValidationOnceAPI(RequestValidationAPI):
    def make_operation(self, operation) -> RequestValidationOperation:
        return _ValidationOnce(self.next_app, operation=operation, strict_validation=self.strict_validation,
                               validator_map=self.validator_map)


class ValidationMiddleware(RequestValidationMiddleware):
    """connexion's RequestValidationMiddleware whose operations keep their parameter validator."""

    api_cls = _ValidationOnceAPI
