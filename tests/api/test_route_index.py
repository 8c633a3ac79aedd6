"""Routing by first segment (api.route_index): what starlette's one Router would pick, at the cost
of the routes that share the path's first segment only."""
from __future__ import annotations

import asyncio
import logging
import re

import pytest
from starlette.routing import Route, Router

from api import contract
from api.route_index import FirstSegmentRouter


@pytest.mark.parametrize("operation", contract.operations(), ids=lambda op: op.operation_id)
def test_every_operation_of_the_contract_is_routed_to_itself(platform, caplog, operation):
    path = re.sub(r"\{(\w+)\}", r"p-\1", operation.path)
    with caplog.at_level(logging.INFO, logger="api.access"):
        platform.client.request(operation.method.upper(), contract.BASE_PATH + path)
    line = [record for record in caplog.records if record.name == "api.access"][-1]
    assert line.operation == operation.operation_id, (operation.method, path, line.status)


class _Endpoint:
    """An ASGI endpoint that records that it was chosen, and with which path parameters."""

    def __init__(self, name: str, hits: list) -> None:
        self.name, self.hits = name, hits

    async def __call__(self, scope, receive, send) -> None:
        self.hits.append((self.name, scope.get("path_params")))


def _routes(hits: list) -> list[Route]:
    # In the order that decides: a fixed path before its templated sibling, a route whose first
    # segment is a parameter among routes with fixed ones, as the contract may list them.
    return [
        Route("/call/export", _Endpoint("export", hits), methods=["GET"]),
        Route("/call/{callId:path}", _Endpoint("call", hits), methods=["GET", "DELETE"]),
        Route("/{entity:path}/versions", _Endpoint("versions", hits), methods=["GET"]),
        Route("/agents", _Endpoint("agents", hits), methods=["GET", "POST"]),
        Route("/agents/{agentId:path}", _Endpoint("agent", hits), methods=["PATCH"]),
        Route("/", _Endpoint("root", hits), methods=["GET"]),
    ]


def _outcome(app, hits: list, method: str, path: str):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "root_path": "",
             "query_string": b"", "headers": [(b"host", b"testserver")], "scheme": "http",
             "server": ("testserver", 80)}
    hits.clear()
    asyncio.run(app(scope, receive, send))
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    answer = None if start is None else (start["status"], dict(start["headers"]).get(b"location"))
    return list(hits), answer


PROBES = ["/call/export", "/call/c1", "/call/export/versions", "/call/c1/versions", "/agents", "/agents/",
          "/agents/a1", "/agents/a1/versions", "/nothing", "/nothing/versions", "/nothing/", "", "/", "/call",
          "/call/", "/versions"]


@pytest.mark.parametrize("method", ["GET", "POST", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", PROBES)
def test_it_picks_what_the_one_router_picks(method, path):
    hits: list = []
    linear = Router(routes=_routes(hits))
    assert _outcome(FirstSegmentRouter(linear), hits, method, path) == _outcome(linear, hits, method, path)


def test_order_and_refusals_are_kept():
    hits: list = []
    indexed = FirstSegmentRouter(Router(routes=_routes(hits)))
    assert _outcome(indexed, hits, "GET", "/call/export") == ([("export", {})], None)
    assert _outcome(indexed, hits, "GET", "/call/c1") == ([("call", {"callId": "c1"})], None)
    # The templated route listed first takes what the parameter-first one would also match.
    assert _outcome(indexed, hits, "GET", "/call/c1/versions") == ([("call", {"callId": "c1/versions"})], None)
    assert _outcome(indexed, hits, "GET", "/agents/a1/versions") == ([("versions", {"entity": "agents/a1"})], None)
    assert _outcome(indexed, hits, "DELETE", "/agents")[1][0] == 405
    assert _outcome(indexed, hits, "GET", "/call") == ([], (307, b"http://testserver/call/"))
    assert _outcome(indexed, hits, "GET", "/nothing")[1][0] == 404


def test_a_request_tries_only_the_routes_of_its_first_segment(monkeypatch):
    hits: list = []
    routes = _routes(hits) + [Route(f"/group{n}/{{id:path}}", _Endpoint(f"g{n}", hits), methods=["GET"])
                              for n in range(150)]
    indexed = FirstSegmentRouter(Router(routes=routes))
    tried = []
    original = Route.matches
    monkeypatch.setattr(Route, "matches", lambda self, scope: (tried.append(self.path), original(self, scope))[1])
    assert _outcome(indexed, hits, "GET", "/group149/x") == ([("g149", {"id": "x"})], None)
    # Its own route and the one whose first segment is a parameter, not the 150 before it.
    assert sorted(tried) == ["/group149/{id:path}", "/{entity:path}/versions"]
    tried.clear()
    _outcome(indexed, hits, "GET", "/unknown")
    # Once as sent, once with a trailing slash (starlette's redirect check).
    assert tried == ["/{entity:path}/versions"] * 2


def test_a_second_api_chained_on_the_same_base_path_fails_at_startup():
    # connexion chains it by setting the mount's default, which the per-segment Routers would
    # not see: refused rather than ignored.
    indexed = FirstSegmentRouter(Router(routes=_routes([])))
    with pytest.raises(AttributeError):
        indexed.default = Router()
