"""Cross-origin access (CORS) for the origins that CORS_ORIGINS names, and none by default.

With no origin configured the app is served as it is: no CORS header on any response, and a
preflight (OPTIONS) gets the 405 of any method the contract does not define. A configured origin's
pages may call every operation with a bearer token (never with cookies: the API takes none) and
read the headers the API sets. Preflights are answered here, before routing, in the envelope.
"""
from __future__ import annotations

import orjson
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp

from .envelope import ORIGIN_NOT_ALLOWED, error_body

# What a page sends besides the CORS-safelisted headers, and what it may read of an answer.
REQUEST_HEADERS = ("Authorization", "Content-Type", "X-Request-ID")
RESPONSE_HEADERS = ("X-Request-ID", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After")


def cross_origin(app: ASGIApp, origins: str, operations) -> ASGIApp:
    """``app`` answering the comma-separated ``origins`` (``*``: any), or ``app`` itself if none."""
    allowed = [origin.strip() for origin in origins.split(",") if origin.strip()]
    if not allowed:
        return app
    methods = sorted({operation.method.upper() for operation in operations} | {"HEAD"})
    return CrossOriginMiddleware(app, allow_origins=allowed, allow_methods=methods, allow_headers=REQUEST_HEADERS,
                                 expose_headers=RESPONSE_HEADERS, allow_credentials=False)


class CrossOriginMiddleware(CORSMiddleware):
    """Starlette's CORS middleware, answering preflights in the envelope instead of plain text."""

    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers=request_headers)
        allowed = answer.status_code == 200
        # Starlette says what was refused: "Disallowed CORS origin, method".
        message = "Cross-origin request allowed." if allowed else answer.body.decode() + "."
        headers = {name: value for name, value in answer.headers.items()
                   if name.lower() not in ("content-length", "content-type")}
        body = (orjson.dumps({"success": True, "data": {"message": message, "result": None}}) if allowed
                else error_body(answer.status_code, message, ORIGIN_NOT_ALLOWED))
        return Response(body, status_code=answer.status_code, headers=headers, media_type="application/json")
