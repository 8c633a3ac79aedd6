"""Workspace scoping: every workspace-owned model is read through in_workspace, never a bare select()."""
from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import models
from models.kernel.db import BaseModel
from models.kernel.scoping import WorkspaceScoped

MODELS_DIR = Path(models.__file__).parent


def _scoped_models() -> set[str]:
    for info in pkgutil.walk_packages(models.__path__, "models."):
        importlib.import_module(info.name)
    found, stack = set(), list(WorkspaceScoped.__subclasses__())
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        found.add(model.__name__)
    return found


def test_every_model_with_a_workspace_is_workspace_scoped():
    from models.identity.tables import Membership  # the join of people and workspaces, read from both sides
    stack, unscoped = list(BaseModel.__subclasses__()), []
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        if "workspace" in model._meta.fields and not issubclass(model, WorkspaceScoped) and model is not Membership:
            unscoped.append(model.__name__)
    assert unscoped == []


def test_no_bare_select_of_a_scoped_model_in_the_domain():
    scoped = _scoped_models()
    assert "ApiKey" in scoped
    offences = []
    for path in MODELS_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "select"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in scoped):
                offences.append(f"{path.relative_to(MODELS_DIR)}:{node.lineno} {node.func.value.id}.select()")
    assert offences == [], "read scoped models through in_workspace(): " + ", ".join(offences)


def test_in_workspace_filters_by_the_workspace(platform):
    from models.identity.tables import ApiKey
    from models.kernel.db import session
    from tests.support import factories
    a, b = factories.workspace("a"), factories.workspace("b")
    factories.api_key(a)
    factories.api_key(b)
    with session():
        assert {k.workspace_id for k in ApiKey.in_workspace(a.workspace_id)} == {a.workspace_id}


def _joins_of_scoped_models(tree: ast.AST, scoped: set[str]):
    """(line, target, on) of each ``.join(target, ...)`` and ``.join_from(source, target, ...)`` in
    ``tree`` whose target is a scoped model or an alias of one (``head = Version.alias()``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value] * len(targets)
            for target, value in zip(targets, values):
                if (isinstance(target, ast.Name) and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                        and value.func.attr == "alias" and isinstance(value.func.value, ast.Name)
                        and value.func.value.id in scoped):
                    aliases.add(target.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "join_from"):
            position = 0 if node.func.attr == "join" else 1
            if len(node.args) > position and isinstance(node.args[position], ast.Name):
                target = node.args[position].id
                if target in scoped or target in aliases:
                    on = next((k.value for k in node.keywords if k.arg == "on"), None)
                    yield node.lineno, target, on


def _held_to_one_workspace(on) -> bool:
    return (isinstance(on, ast.Call) and isinstance(on.func, ast.Name) and on.func.id == "same_workspace")


def test_every_join_of_a_scoped_model_is_held_to_one_workspace():
    """A stored reference may name another workspace's id (a report names any agentId): a join that
    followed it without the workspace would bring that workspace's row in."""
    scoped = _scoped_models()
    offences, seen = [], 0
    for path in MODELS_DIR.rglob("*.py"):
        for line, target, on in _joins_of_scoped_models(ast.parse(path.read_text()), scoped):
            seen += 1
            if not _held_to_one_workspace(on):
                offences.append(f"{path.relative_to(MODELS_DIR)}:{line} join of {target}")
    assert seen >= 8, "the search found too few joins to be looking at the code"
    assert offences == [], "join scoped models with on=same_workspace(...): " + ", ".join(offences)


def test_the_join_rule_finds_a_join_without_the_workspace():
    scoped = _scoped_models()
    code = ("head = Version.alias()\n"
            "q = Call.in_workspace(w).join_from(Call, Agent, on=(Agent.id == Call.agent_id))\n"
            "r = Branch.in_workspace(w).join_from(Branch, head, on=same_workspace(head.id == Branch.x, head, Branch))\n"
            "s = ApiKey.in_workspace(w).join(User)\n")
    found = [(line, target, _held_to_one_workspace(on)) for line, target, on in
             _joins_of_scoped_models(ast.parse(code), scoped)]
    assert found == [(2, "Agent", False), (3, "head", True)]


def test_a_foreign_id_joins_nothing(platform):
    """Workspace B's call names A's agent: B's call shows the id, never A's agent's name."""
    from models.calls.calls import get_call
    from models.kernel.db import session
    from tests.support import factories
    a, b = factories.workspace("a"), factories.workspace("b")
    agent_id = factories.agent(a, name="Alpha private agent")
    call_id = factories.call(b, agent_id=agent_id)
    with session():
        call = get_call(workspace_id=b.workspace_id, call_id=call_id)
    assert call.call.agent_id == agent_id and call.call.agent_name is None
