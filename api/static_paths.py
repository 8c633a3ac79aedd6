"""405 for a method a fixed path does not define, where a templated sibling would take the request.

``GET /call/export`` and ``DELETE /call/{callId}`` are both in the contract, so routing alone sends
``DELETE /call/export`` to deleteCall with the id "export". The fixed path is the more specific
resource: a method it lacks is 405 with its Allow header, as on every other path.
"""
from __future__ import annotations

import functools
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from .envelope import error_body


class StaticPathMethods:
    def __init__(self, app: ASGIApp, operations, base_path: str) -> None:
        self.app = app
        methods: dict[str, set[str]] = {}
        for operation in operations:
            methods.setdefault(base_path + operation.path, set()).add(operation.method.upper())
        # Paths that another templated path of the contract would also match, with a fixed segment
        # where that one has a parameter (/call/export under /call/{callId}, and as well
        # /campaign/{campaignId}/contacts/import under /campaign/{campaignId}/contacts/{contactId}).
        self.allowed = _allowed(tuple((path, frozenset(verbs)) for path, verbs in methods.items()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"].rstrip("/") or "/"
            allowed = next((verbs for pattern, verbs in self.allowed if pattern.fullmatch(path)), None)
            if allowed and scope["method"] not in allowed:
                body = error_body(405, f"{scope['method']} is not allowed on this path; it allows {', '.join(allowed)}.")
                await send({"type": "http.response.start", "status": 405, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"allow", ", ".join(allowed).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


@functools.lru_cache(maxsize=4)
def _allowed(methods: tuple[tuple[str, frozenset[str]], ...]) -> list[tuple[re.Pattern, list[str]]]:
    """Worked out once per contract (each app of a process, a test's, has the same): a pairwise
    comparison of every path."""
    templates = [path for path, _ in methods if "{" in path]
    return [(_pattern(path), sorted(verbs | ({"HEAD"} if "GET" in verbs else set())))
            for path, verbs in methods if any(_shadows(template, path) for template in templates)]


def _shadows(template: str, path: str) -> bool:
    """Whether ``template`` also matches ``path``, which has a fixed segment where it has a parameter."""
    parts, given = template.split("/"), path.split("/")
    if len(parts) != len(given):
        return False
    pairs = list(zip(parts, given))
    return all(p == g or p.startswith("{") for p, g in pairs) and \
        any(p.startswith("{") and not g.startswith("{") for p, g in pairs)


def _pattern(path: str) -> re.Pattern:
    return re.compile("/".join("[^/]+" if part.startswith("{") else re.escape(part) for part in path.split("/")))
