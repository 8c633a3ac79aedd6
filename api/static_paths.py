"""405 for a method a fixed path does not define, where a templated sibling would take the request.

``GET /call/export`` and ``DELETE /call/{callId}`` are both in the contract, so routing alone sends
``DELETE /call/export`` to deleteCall with the id "export". The fixed path is the more specific
resource: a method it lacks is 405 with its Allow header, as on every other path.
"""
from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .envelope import error_body


class StaticPathMethods:
    def __init__(self, app: ASGIApp, operations, base_path: str) -> None:
        self.app = app
        methods: dict[str, set[str]] = {}
        for operation in operations:
            methods.setdefault(base_path + operation.path, set()).add(operation.method.upper())
        templated = [path for path in methods if "{" in path]
        self.allowed = {}
        for path, verbs in methods.items():
            # Only fixed paths that a templated path of the contract would also match.
            if "{" not in path and any(_could_match(template, path) for template in templated):
                self.allowed[path] = sorted(verbs | ({"HEAD"} if "GET" in verbs else set()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (allowed := self.allowed.get(scope["path"].rstrip("/") or "/")) \
                and scope["method"] not in allowed:
            body = error_body(405, f"{scope['method']} is not allowed on this path; it allows {', '.join(allowed)}.")
            await send({"type": "http.response.start", "status": 405, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"allow", ", ".join(allowed).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _could_match(template: str, path: str) -> bool:
    parts, given = template.split("/"), path.split("/")
    return len(parts) == len(given) and all(p == g or p.startswith("{") for p, g in zip(parts, given))
