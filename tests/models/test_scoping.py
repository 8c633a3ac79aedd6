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
