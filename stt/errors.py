"""Errors of the speech server, in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""
from __future__ import annotations

from aiohttp import web

from models.kernel.errors import DomainError

_DOMAIN = {401: ("invalid_request_error", "invalid_api_key"), 403: ("invalid_request_error", "forbidden"),
           402: ("insufficient_quota", "insufficient_quota"), 429: ("requests", "rate_limit_exceeded")}


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 type_: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.type = type_ or ("server_error" if status >= 500 else "invalid_request_error")
        self.headers = headers or {}

    @classmethod
    def from_domain(cls, exc: DomainError) -> "ApiError":
        type_, code = _DOMAIN.get(exc.status, ("invalid_request_error", None))
        return cls(exc.status, exc.message, code=code, type_=type_, headers=exc.headers)

    def response(self) -> web.Response:
        body = {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}
        return web.json_response(body, status=self.status, headers=self.headers)
