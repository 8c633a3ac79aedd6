"""The configuration documents of agents and workflows: their JSON Schemas, defaults and rules.

The schemas are the contract's own files (openapi/schemas/agent-config.yaml and
workflow-config.yaml), which the contract publishes and connexion applies to request bodies. The
domain applies them again to every configuration it saves, because not every configuration it
saves came in a body that declares them: a branch commit takes either kind, a merge computes one.
Each top-level property has a ``default`` there, and a configuration that omits it takes it, so
an agent created with only a name is valid and complete.

What a schema cannot say (a workflow's edges must name its nodes, it has one start node) is
checked here, with a message naming the node or edge.
"""
from __future__ import annotations

import copy
import functools
import importlib.resources
from pathlib import Path

import yaml
from jsonschema import Draft7Validator

from models.kernel.errors import InvalidInput

# The contract's own configuration schemas, from the package that ships them (see api.contract).
SCHEMA_DIR = Path(str(importlib.resources.files("openapi"))) / "schemas"


@functools.cache
def _validator(kind: str) -> Draft7Validator:
    schema = yaml.safe_load((SCHEMA_DIR / f"{kind}-config.yaml").read_text())
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)


def defaults(kind: str) -> dict:
    """The complete default configuration of ``kind`` (agent or workflow)."""
    properties = _validator(kind).schema["properties"]
    return {name: copy.deepcopy(spec["default"]) for name, spec in properties.items()}


def complete(kind: str, config: dict | None) -> dict:
    """``config`` with every omitted top-level property at its default, checked against the schema
    and the rules of ``kind``; InvalidInput naming the first problem otherwise."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise InvalidInput("config must be a JSON object.")
    full = {**defaults(kind), **config}
    error = next(iter(sorted(_validator(kind).iter_errors(full), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        where = "config" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise InvalidInput(f"{where}: {_short(error.message).rstrip('.')}.")
    if kind == "workflow":
        check_workflow_graph(full)
    return full


def check_workflow_graph(config: dict) -> None:
    """One start node, unique node ids, edges between existing nodes, agent nodes naming an agent."""
    nodes, edges = config["nodes"], config["edges"]
    ids = [node["id"] for node in nodes]
    if repeated := sorted({i for i in ids if ids.count(i) > 1}):
        raise InvalidInput(f"config.nodes: node ids must be unique; repeated: {', '.join(repeated)}.")
    starts = [node["id"] for node in nodes if node["type"] == "start"]
    if not starts:
        raise InvalidInput("config.nodes: the workflow has no start node (a node of type start).")
    if len(starts) > 1:
        raise InvalidInput(f"config.nodes: a workflow has one start node; found {len(starts)}: {', '.join(starts)}.")
    for index, node in enumerate(nodes):
        if node["type"] == "agent" and not node.get("agentId"):
            raise InvalidInput(f"config.nodes[{index}] ({node['id']}): a node of type agent needs agentId.")
    known = set(ids)
    for index, edge in enumerate(edges):
        for end in ("from", "to"):
            if edge[end] not in known:
                raise InvalidInput(f"config.edges[{index}].{end} names the node {edge[end]!r}, which does not exist.")


def agent_ids(config: dict) -> list[str]:
    """The agents a workflow configuration routes between, each once, in node order."""
    return list(dict.fromkeys(node["agentId"] for node in config["nodes"] if node.get("agentId")))


def _short(message: str, limit: int = 300) -> str:
    # jsonschema quotes the whole offending value, which may be a large document.
    return message if len(message) <= limit else message[: limit - 1] + "…"
