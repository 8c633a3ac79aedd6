"""Routing by the path's first segment, so that a request's cost does not grow with the contract.

starlette's Router tries its routes one after the other, each a regular expression. With every
operation of the contract in one router, a request paid for each route listed before its own:
GET /workspace/logs tried 79 routes, and each new resource group lengthens the scan for the
groups after it. A route whose first segment is fixed text can only match a path with that
first segment, so here each first segment has a Router of its own holding those routes and
the routes whose first segment is a parameter, in their order in the contract. Each of those
Routers is starlette's own: the first full match wins, a match but for the method answers 405
(partial), a path that matches only with its trailing slash toggled is redirected, anything else
goes to the default, exactly as the one Router did, since the routes it leaves out could not
have matched.
"""
from __future__ import annotations

from connexion.middleware.routing import RoutingMiddleware

# The helper starlette's own routes match with, so the segment is read from the path they see.
from starlette._utils import get_route_path
from starlette.routing import Mount, Router
from starlette.types import ASGIApp, Receive, Scope, Send


def _first_segment(route) -> str | None:
    """The fixed text of the route's first segment; None where it holds a parameter."""
    path = getattr(route, "path", None)
    if path is None:
        return None
    segment = path[1:].partition("/")[0]
    return None if "{" in segment else segment


class FirstSegmentRouter:
    """Stands in for ``router`` (its routes and default as they are now)."""

    def __init__(self, router: Router) -> None:
        self.linear = router
        segments = [(route, _first_segment(route)) for route in router.routes]
        everywhere = [route for route, segment in segments if segment is None]
        self._by_segment = {
            key: self._router([route for route, segment in segments if segment in (key, None)])
            for key in {segment for _, segment in segments if segment is not None}}
        self._elsewhere = self._router(everywhere) if everywhere else None

    def _router(self, routes) -> Router:
        return Router(routes=routes, default=self.linear.default, redirect_slashes=self.linear.redirect_slashes)

    @property
    def routes(self):
        return self.linear.routes

    @property
    def default(self):
        # Read-only: connexion chains a second API on the same base path by setting its mount's
        # default, which the per-segment Routers would not see; that fails here, at startup.
        return self.linear.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.linear(scope, receive, send)
            return
        segment = get_route_path(scope)[1:].partition("/")[0]
        router = self._by_segment.get(segment, self._elsewhere)
        app: ASGIApp = router if router is not None else self.linear.default
        await app(scope, receive, send)


def index_mounts(router: Router) -> None:
    """Each API mounted on ``router`` (one Mount per base path) routed by first segment."""
    for route in router.routes:
        if isinstance(route, Mount) and isinstance(route.app, Router):
            route.app = FirstSegmentRouter(route.app)  # Mount.routes still lists the routes


class IndexedRoutingMiddleware(RoutingMiddleware):
    """connexion's RoutingMiddleware, which finds each request's operation, routing by first segment."""

    def add_api(self, specification, base_path=None, arguments=None, **kwargs) -> None:
        super().add_api(specification, base_path=base_path, arguments=arguments, **kwargs)
        index_mounts(self.router)
