"""The contract, loaded once: the bundled OpenAPI document and the operations in it.

openapi/management.yaml is the root; it refers to one file per resource group (paths/,
schemas/) and to the shared parts (components/) with relative ``$ref``s. ``bundle()`` brings them
into one document whose references all point inside it, which connexion then resolves: the
document the app routes by and serves as /api/v2/openapi.json. The app and the tests read
operations, their permissions and their handlers from here, never from the YAML.

Why bundle ourselves: given the root file, connexion parsed every referenced file again for each
of its thousands of references with PyYAML's pure-Python parser, then validated the fully resolved
document (6 MB) against the OpenAPI schema, twice per process: 10 to 15 s before a process could
serve, in every worker. The bundle is parsed with libyaml, each file once, and the app skips
connexion's check (ContractSpecification), which the tests make instead: about half a second.
"""
from __future__ import annotations

import functools
import importlib.resources
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from connexion.spec import OpenAPISpecification

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


# Where the bundle keeps the other files (every file but the root and the path items'), whole, by
# name: ``x-bundled/schemas.agents`` is schemas/agents.yaml. An extension of the document, so
# that a file may hold helpers that are not schemas (a set of properties others pick from).
BUNDLED = "x-bundled"
_PATHS_DIR = "paths"


@functools.cache
def _load(path: str) -> dict:
    with open(path, "rb") as file:
        return yaml.load(file, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def bundle() -> dict:
    """The root file with every other file brought in: path items in their place, the other
    files whole under ``x-bundled``, each ``$ref`` rewritten to point inside the document."""
    root = str(SPEC_FILE)
    bundled: dict[str, dict] = {}

    @functools.cache
    def target(path: str, location: str) -> tuple[str, str | None]:
        """The file a reference in ``path`` names, and its key in the bundle (None: a path item's)."""
        file = os.path.normpath(os.path.join(os.path.dirname(path), location)) if location else path
        relative = os.path.relpath(file, SPEC_DIR)
        in_paths = os.path.dirname(relative) == _PATHS_DIR
        return file, None if in_paths else os.path.splitext(relative)[0].replace(os.sep, ".")

    def inside(path: str, key: str) -> str:
        if key not in bundled:
            bundled[key] = {}  # taken before it is filled: a file may refer to itself
            bundled[key] = rewrite(_load(path), path)
        return f"#/{BUNDLED}/{key}"

    def rewrite(node, path: str):
        if isinstance(node, list):
            return [rewrite(item, path) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" not in node:
            return {key: rewrite(value, path) for key, value in node.items()}
        location, _, pointer = node["$ref"].partition("#")
        file, key = target(path, location)
        if file == root:
            return dict(node)  # the root's own references stay as they are
        if key is not None:
            return {"$ref": inside(file, key) + pointer.rstrip("/")}
        part = _load(file)
        for step in pointer.split("/")[1:]:
            step = step.replace("~1", "/").replace("~0", "~")
            part = part[int(step)] if isinstance(part, list) else part[step]
        return rewrite(part, file)  # a path item, or a part of one: in its place

    document = {key: rewrite(value, root) for key, value in _load(root).items()}
    document[BUNDLED] = bundled
    return document


class ContractSpecification(OpenAPISpecification):
    """The contract as connexion holds it, without connexion's check of the document against the
    OpenAPI schema at every start (seconds of CPU in each process): the document is fixed once the
    package is built, and tests/openapi makes that check, and stricter ones, on it."""

    @classmethod
    def _validate_spec(cls, spec) -> None:
        return None


@functools.cache
def specification() -> ContractSpecification:
    """The bundle, resolved: what the app routes and validates by (api.app). Connexion writes
    into it (a body schema gets the document's components, to resolve against), so it is the
    app's alone: ``document()`` is another."""
    return ContractSpecification(bundle())


@functools.cache
def document() -> dict:
    """The bundled contract, resolved, as served: without the bundled files (every reference to
    them is resolved in its place), as the root file writes it."""
    return as_served(ContractSpecification(bundle()).spec)


def as_served(resolved: dict) -> dict:
    """``resolved`` (a resolved bundle) without the files the bundle kept."""
    return {key: value for key, value in resolved.items() if key != BUNDLED}


@functools.cache
def operations() -> tuple[Operation, ...]:
    return tuple(Operation(path, method, op) for path, item in document()["paths"].items()
                 for method, op in item.items() if method in HTTP_METHODS)
