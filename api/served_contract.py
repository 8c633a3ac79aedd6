"""The contract as served (GET /api/v2/openapi.json and .yaml, which Swagger UI reads), made once.

connexion makes the served document anew for every request: a deep copy of the whole contract,
validated again, then serialised. That took 1 to 2 s of the event loop per request on a 2-core
host, during which the process served nothing else, and any client, without a credential, could
ask for it again and again. The document depends only on the base path the request came under
(uvicorn's ``root_path``, a setting of the server, never of the client), so each is made once
and its bytes are kept.
"""
from __future__ import annotations

from connexion.jsonifier import Jsonifier
from connexion.middleware.swagger_ui import SwaggerUIAPI, SwaggerUIMiddleware
from connexion.utils import yamldumper
from starlette.responses import Response

from .contract import as_served
from .route_index import index_mounts


class _CachedSwaggerUIAPI(SwaggerUIAPI):
    def __init__(self, *args, **kwargs) -> None:
        self._served: dict[tuple[str, str], bytes] = {}
        super().__init__(*args, **kwargs)

    def _document(self, request, media_type: str) -> Response:
        key = (self._base_path_for_prefix(request), media_type)
        if key not in self._served:
            # Without the files the bundle kept beside the paths (api.contract.bundle).
            spec = as_served(self._spec_for_prefix(request))
            # As connexion serialises it (its Jsonifier writes the dates YAML parsed).
            text = Jsonifier().dumps(spec) if media_type == "application/json" else yamldumper(spec)
            self._served[key] = text.encode()
        return Response(self._served[key], media_type=media_type)

    async def _get_openapi_json(self, request):
        return self._document(request, "application/json")

    async def _get_openapi_yaml(self, request):
        return self._document(request, "text/yaml")


class ServedContractMiddleware(SwaggerUIMiddleware):
    """connexion's SwaggerUIMiddleware, with each served document made once."""

    def add_api(self, specification, base_path=None, arguments=None, **kwargs) -> None:
        api = _CachedSwaggerUIAPI(specification, base_path=base_path, arguments=arguments, default=self.default_fn,
                                  **kwargs)
        self.router.mount(api.base_path, app=api.router)
        index_mounts(self.router)
