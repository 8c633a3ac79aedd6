"""The tests' own layout: a test module imports what it shares with others from tests/support, never
from another test module or a conftest.py. A helper living in a test module drags that module's
tests (and its fixtures) into every importer, and moves whenever the tests do."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports (``from tests.x import test_y`` counts as tests.x.test_y)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def forbidden(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") or part == "conftest" for part in parts[1:])


def test_no_test_module_imports_another_or_a_conftest():
    offenders = [f"{path.relative_to(TESTS.parent)} imports {module}"
                 for path in sorted(TESTS.rglob("*.py"))
                 for module in imported_modules(path) if forbidden(module)]
    assert offenders == []


def test_the_check_sees_what_it_forbids(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text("from tests.handlers.test_agents import Api\nfrom tests.stt import conftest\n"
                     "import tests.models.test_sql\nfrom tests.support.client import Api\n")
    assert [module for module in imported_modules(probe) if forbidden(module)] == [
        "tests.handlers.test_agents", "tests.handlers.test_agents.Api", "tests.stt.conftest",
        "tests.models.test_sql"]
