"""The domain's shape: packages by domain, tables apart from services, no import cycle, no import
hidden inside a function, and a calls package that knows nothing of what a recorded call triggers."""
from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import models
from models.kernel.db import BaseModel

MODELS_DIR = Path(models.__file__).parent
DOMAINS = ("kernel", "identity", "configs", "calls", "webhooks", "billing", "audit", "telephony", "campaigns",
           "feedback", "reviews", "optimization", "conversations", "simulations", "personas", "assertions",
           "chat", "call_access", "live_calls", "dashboards", "exports", "catalog", "speech", "integrations", "knowledge", "audio",
           "syncs")


def _modules() -> dict[str, Path]:
    """Every module of the domain by its dotted name (migrations are data, not domain)."""
    found = {}
    for path in MODELS_DIR.rglob("*.py"):
        parts = path.relative_to(MODELS_DIR).with_suffix("").parts
        if parts[0] == "migrations":
            continue
        name = ".".join(("models", *parts)).removesuffix(".__init__")
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported domain module, line, at the module's top level) for each import of ``path``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            # "from models.x import y": y may be a module of the package or a name of models.x.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target in MODULES and target != "models":
                found.append((target, node.lineno, id(node) in top))
    return found


GRAPH = {name: sorted({target for target, _, _ in _imports(name, path)}) for name, path in MODULES.items()}


def test_the_domain_is_split_into_packages_by_domain():
    # models.call_recorded is the one list of what a recorded call triggers, models.entity_users of
    # what keeps an agent from being deleted: they span the domains.
    flat = [name for name, path in MODULES.items()
            if path.parent == MODELS_DIR and path.name != "__init__.py" and name not in ("models.call_recorded", "models.entity_users")]
    assert flat == [], f"a domain module belongs in one of the packages {', '.join(DOMAINS)}: {flat}"
    assert {name.split(".")[1] for name in MODULES if name.count(".") >= 2} == set(DOMAINS)


def test_no_import_inside_a_function():
    hidden = [f"{name}:{line} imports {target}" for name, path in MODULES.items()
              for target, line, top in _imports(name, path) if not top]
    hidden += [f"{name}:{node.lineno}" for name, path in MODULES.items()
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               for inner in ast.walk(node) if isinstance(inner, (ast.Import, ast.ImportFrom))]
    assert hidden == [], "import at the top of the file (a cycle is broken by moving code, not the import)"


def _cycle() -> list[str] | None:
    """One import cycle among the domain's modules, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        stack.append(name)
        for target in GRAPH.get(name, []):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[name] = 2
        return None

    for name in sorted(GRAPH):
        if name not in state and (found := visit(name)):
            return found
    return None


def test_no_import_cycle_between_modules_of_the_domain():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle():
    # The check itself, on a graph with one: a check that cannot fail would pass anything.
    saved = dict(GRAPH)
    try:
        GRAPH["models.kernel.errors"] = [*GRAPH["models.kernel.errors"], "models.kernel.db"]
        cycle = _cycle()  # entered at whichever of the two the walk, in name order, reaches first
        assert cycle[0] == cycle[-1] and sorted(set(cycle)) == ["models.kernel.db", "models.kernel.errors"], cycle
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in GRAPH.get(todo.pop(), []):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_calls_package_imports_none_of_what_a_recorded_call_triggers():
    subscribers = ("models.call_recorded", "models.billing", "models.webhooks")
    for name in (n for n in MODULES if n.startswith("models.calls.")):
        reached = sorted(t for t in _reachable(name) if t.startswith(subscribers))
        assert reached == [], f"{name} reaches {reached}; list what a recorded call triggers in models.call_recorded"


def test_tables_are_apart_from_services():
    for info in pkgutil.walk_packages(models.__path__, "models."):
        importlib.import_module(info.name)
    stack, misplaced = list(BaseModel.__subclasses__()), []
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        if model.__module__.startswith("models.") and not model.__module__.endswith(".tables") \
                and model.__module__ != "models.kernel.scoping":  # the tenant table and the scoping base
            misplaced.append(f"{model.__module__}.{model.__name__}")
    assert misplaced == [], "a table belongs in its package's tables.py"
    # A tables module builds on the kernel and on other tables only, so any service can import it.
    for name in (n for n in MODULES if n.endswith(".tables")):
        services = [t for t in GRAPH[name] if not (t.startswith("models.kernel.") or t.endswith(".tables"))]
        assert services == [], f"{name} imports services: {services}"
