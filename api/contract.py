"""The contract, loaded once: the bundled OpenAPI document and the operations in it.

openapi/management.yaml is the root; it refers to one file per resource group (paths/,
schemas/) and to the shared parts (components/) with relative ``$ref``s. Connexion resolves
them into one document, which the app routes by and serves as /api/v2/openapi.json. The app and
the tests read operations, their permissions and their handlers from here, never from the YAML.
"""
from __future__ import annotations

import functools
import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

from connexion.spec import Specification

# The package openapi holds the YAML files, in a checkout and in an installed wheel alike.
SPEC_DIR = Path(str(importlib.resources.files("openapi")))
SPEC_FILE = SPEC_DIR / "management.yaml"
BASE_PATH = "/api/v2"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# Marks an operation whose handler may wait on something else than a few statements of our
# database: it runs in a worker thread, every other one on the event loop (see api.app).
IN_THREAD = "x-in-thread"


@dataclass(frozen=True)
class Operation:
    path: str  # as in the contract, without the base path: /api-keys/{apiKeyId}
    method: str  # lower case
    spec: dict  # the operation object, every $ref resolved

    @property
    def operation_id(self) -> str:
        return self.spec["operationId"]

    @property
    def permission_rule(self) -> PermissionRule:
        return PermissionRule.of(self.spec.get("x-permission"))

    @property
    def controller(self) -> str:
        return self.spec["x-openapi-router-controller"]

    @property
    def handler_name(self) -> str:
        return handler_name(self.operation_id)

    @property
    def parameters(self) -> list[dict]:
        return self.spec.get("parameters", [])

    def parameter(self, name: str) -> dict | None:
        return next((p for p in self.parameters if p["name"] == name), None)

    @property
    def streams_body(self) -> bool:
        """Its body is a file (``format: binary``, an upload), which its handler reads as a stream
        (api.body_limit counts it against ``MAX_RECORDING_BYTES``), not JSON."""
        content = self.spec.get("requestBody", {}).get("content", {})
        return any(media.get("schema", {}).get("format") == "binary" for media in content.values())

    @property
    def in_thread(self) -> bool:
        return self.spec.get(IN_THREAD) is True

    @property
    def secured(self) -> bool:
        return self.spec.get("security", document().get("security")) != []


@dataclass(frozen=True)
class PermissionRule:
    """What an operation's ``x-permission`` says: one permission, or, where the operation acts on
    an entity named by a path parameter (``/versions/{entityType}/...``), one per value of it:
    ``x-permission: {entityType: {agent: agents:write, workflow: workflows:write}}``."""
    fixed: str | None = None
    parameter: str | None = None
    by_value: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, value) -> PermissionRule:
        if isinstance(value, dict):
            (parameter, mapping), = value.items()
            return cls(parameter=parameter, by_value=tuple(mapping.items()))
        return cls(fixed=value)

    @property
    def permissions(self) -> tuple[str, ...]:
        """Every permission the operation may need."""
        return (self.fixed,) if self.fixed else tuple(dict.fromkeys(p for _, p in self.by_value))

    def for_path(self, path_params: dict) -> str | None:
        """The permission a request with these path parameters needs. A value the rule does not
        know needs the first permission listed (validation refuses the value anyway)."""
        if self.fixed or not self.parameter:
            return self.fixed
        return dict(self.by_value).get(path_params.get(self.parameter), self.by_value[0][1])


def handler_name(operation_id: str) -> str:
    """operationId ``createApiKey`` is handled by the function ``create_api_key``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


@functools.cache
def document() -> dict:
    """The bundled contract, as served."""
    return Specification.load(str(SPEC_FILE)).spec


@functools.cache
def operations() -> tuple[Operation, ...]:
    return tuple(Operation(path, method, op) for path, item in document()["paths"].items()
                 for method, op in item.items() if method in HTTP_METHODS)
