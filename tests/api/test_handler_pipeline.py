"""The handler pipeline and the parameter validation made once per operation (api.handler_pipeline,
api.validation.ValidationMiddleware): what connexion's own, made per request, answers and passes
to a handler, at none of the per-request making."""
from __future__ import annotations

import pytest
from connexion import AsyncApp
from connexion.decorators import StarletteDecorator
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.request_validation import RequestValidationMiddleware
from starlette.testclient import TestClient

import api.app  # noqa: F401  (path parameters routed as text, as the service routes them)
from api.handler_pipeline import ApiDecoratedOnce
from api.validation import NamedParameterValidator, ValidationMiddleware

HERE = __name__


def echo_all(**kwargs):
    return {"got": kwargs}, 200


def echo_some(limit, context_):
    return {"got": {"limit": limit, "context": sorted(context_)}}, 201


def create(body, **kwargs):
    return {"got": {"body": body, **kwargs}}, 201


def text_or_json(kind="json"):
    if kind == "text":
        return "plain words", 200  # of the two media types, the one for text
    return {"kind": kind}, 200, {"Content-Type": "application/json"}


def own_header():
    return {"ok": True}, 200, {"Content-Type": "application/problem+json"}


def nothing():
    return None, 204


_QUERY = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
    {"name": "ids", "in": "query", "style": "form", "explode": False,
     "schema": {"type": "array", "maxItems": 3, "items": {"type": "integer"}}},
    {"name": "page-size", "in": "query", "schema": {"type": "number"}},
    {"name": "class", "in": "query", "schema": {"type": "boolean"}},
    {"name": "filter", "in": "query", "style": "deepObject", "explode": True,
     "schema": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                "default": {"a": "x"}}},
]
_JSON = {"description": "ok", "content": {"application/json": {"schema": {}}}}
DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "pipeline", "version": "1"},
    "paths": {
        "/items/{itemId}": {
            "parameters": [{"name": "itemId", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "get": {"operationId": f"{HERE}.echo_all", "parameters": _QUERY, "responses": {"200": _JSON}},
            "put": {"operationId": f"{HERE}.create", "parameters": _QUERY[:2],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["name"], "additionalProperties": False,
                        "properties": {"name": {"type": "string", "maxLength": 5}}}}}},
                    "responses": {"201": _JSON}},
        },
        "/items": {"delete": {"operationId": f"{HERE}.echo_some", "parameters": _QUERY[:2],
                              "responses": {"201": _JSON}}},
        "/kinds": {"get": {"operationId": f"{HERE}.text_or_json",
                           "parameters": [{"name": "kind", "in": "query", "schema": {"type": "string"}}],
                           "responses": {"200": {"description": "either", "content": {
                               "application/json": {"schema": {}}, "text/plain": {"schema": {}}}}}}},
        "/own-header": {"get": {"operationId": f"{HERE}.own_header", "responses": {"200": {
            "description": "problem", "content": {"application/problem+json": {"schema": {}}}}}}},
        "/nothing": {"get": {"operationId": f"{HERE}.nothing", "responses": {"204": {"description": "none"}}}},
    },
}


def _app(once: bool, pythonic: bool):
    middlewares = [ValidationMiddleware if once and m is RequestValidationMiddleware else m
                   for m in ConnexionMiddleware.default_middlewares]
    app = AsyncApp(HERE, middlewares=middlewares, pythonic_params=pythonic)
    if once:
        app._middleware_app.api_cls = ApiDecoratedOnce
    app.add_api(DOCUMENT, strict_validation=True, validator_map={"parameter": NamedParameterValidator})
    return app


PROBES = [
    ("GET", "/items/7", None),
    ("GET", "/items/7?limit=5&offset=3", None),
    ("GET", "/items/7?ids=1,2,3&page-size=2.5&class=true", None),
    ("GET", "/items/7?filter[b]=4", None),
    ("GET", "/items/7?filter[a]=y&filter[b]=4&limit=100", None),
    ("GET", "/items/7?limit=0", None),
    ("GET", "/items/7?limit=101", None),
    ("GET", "/items/7?limit=abc", None),
    ("GET", "/items/7?ids=1,2,3,4", None),
    ("GET", "/items/7?ids=1,x", None),
    ("GET", "/items/7?limit=1&limit=2", None),
    ("GET", "/items/7?unknown=1", None),
    ("GET", "/items/x", None),
    ("GET", "/items/7?class=maybe", None),
    ("DELETE", "/items?limit=9&offset=2", None),
    ("DELETE", "/items", None),
    ("PUT", "/items/7?limit=2", {"name": "abc"}),
    ("PUT", "/items/7", {"name": "abcdef"}),
    ("PUT", "/items/7", {"name": "abc", "other": 1}),
    ("PUT", "/items/7", None),
    ("GET", "/kinds?kind=text", None),
    ("GET", "/kinds?kind=json", None),
    ("GET", "/own-header", None),
    ("GET", "/nothing", None),
]


@pytest.fixture(scope="module", params=[False, True], ids=["sanitized", "pythonic"])
def clients(request):
    with TestClient(_app(False, request.param)) as stock, TestClient(_app(True, request.param)) as once:
        yield stock, once, request.param


@pytest.mark.parametrize("method,url,body", PROBES)
def test_it_answers_and_passes_what_connexion_does(clients, method, url, body):
    stock, once, _ = clients
    answers = []
    for client in (stock, once):
        response = client.request(method, url, json=body)
        answers.append((response.status_code, response.headers.get("content-type"), response.content))
    assert answers[1] == answers[0]
    assert answers[0][0] < 500, answers[0]


def test_the_probes_reach_the_handlers_with_cast_values(clients):
    # The equivalence above is only worth something if the handlers did run and got typed values.
    _, once, pythonic = clients
    got = once.get("/items/7?ids=1,2&limit=5&filter[b]=4").json()["got"]
    assert got["item_id" if pythonic else "itemId"] == 7 and got["limit"] == 5 and got["offset"] == 0 and got["ids"] == [1, 2]
    shadowed = "filter_" if pythonic else "filter"  # a builtin's name, which pythonic_params suffixes
    assert got[shadowed] == {"a": "x", "b": 4}
    assert once.get("/items/7").json()["got"][shadowed] == {"a": "x"}  # the default, not the last request's
    assert once.get("/kinds?kind=text").headers["content-type"].startswith("text/plain")
    assert once.delete("/items?offset=2").json()["got"] == {"limit": 20, "context": []}


def test_a_request_makes_no_decorator_and_no_validator(platform, monkeypatch):
    made = []
    monkeypatch.setattr(StarletteDecorator, "decorate", lambda *a, **k: made.append("decorator"))
    original = NamedParameterValidator.__init__

    def counted(self, *args, **kwargs):
        made.append("validator")
        original(self, *args, **kwargs)

    owner = platform.workspace()
    monkeypatch.setattr(NamedParameterValidator, "__init__", counted)
    for _ in range(3):
        assert platform.client.get("/api/v2/permissions", headers=owner.headers).status_code == 200
        assert platform.client.get("/api/v2/api-keys", params={"workspaceId": owner.workspace_id, "limit": 5},
                                   headers=owner.headers).status_code == 200
    assert made == []
