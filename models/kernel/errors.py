"""Errors the domain raises; the web layer maps each kind to a status code and the envelope (the
speech server to OpenAI's error shape).

Each kind has a ``code``, the envelope's ``data.code``: what a client branches on (the message is
for people and may change). A new kind names its own code, which the contract's ErrorCode enum
must list (tests/openapi/test_convention.py).
"""


class DomainError(Exception):
    """A request the domain refuses; ``message`` is shown to the client as it is."""

    status = 400
    code = "validation_failed"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None, result=None):
        super().__init__(message)
        self.message = message
        self.headers = headers or {}
        # Details a client can act on without parsing the message (a merge's conflicting paths).
        self.result = result


class InvalidInput(DomainError):
    status = 400
    code = "validation_failed"


class WorkspaceMismatch(InvalidInput):
    """A request names two workspaces (its query and its body, say) that differ."""

    code = "workspace_mismatch"


class Unauthenticated(DomainError):
    status = 401
    code = "unauthenticated"


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class RateLimited(DomainError):
    status = 429
    code = "rate_limited"


class Unavailable(DomainError):
    """The request could not be served now (the database is unreachable, or no connection came
    free in time) and may succeed if retried after ``retry_after_s`` seconds."""

    status = 503
    code = "unavailable"

    def __init__(self, message: str, *, retry_after_s: int):
        super().__init__(message, headers={"Retry-After": str(retry_after_s)})
        self.retry_after_s = retry_after_s


class UpstreamFailed(DomainError):
    """A service the request depends on (the language model endpoint) gave no usable answer; the
    message says which and why. Nothing was changed, so the request may simply be sent again."""

    status = 502
    code = "upstream_failed"


class UnsupportedMediaType(DomainError):
    status = 415
    code = "unsupported_media_type"


class UnprocessableContent(DomainError):
    """A request well formed, of a type the operation takes, whose content cannot be used: a file
    that holds no text, an encrypted PDF, bytes that are no document; the message says why."""

    status = 422
    code = "unprocessable_content"
