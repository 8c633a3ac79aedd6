"""Schemathesis over the whole contract against a live server: every phase, every check, fixed seed.

The generated phases (examples, coverage, fuzzing) run once over every operation. The stateful
phase runs once per family of operations that links join (an API key and what acts on it; an
agent, its versions and branches; a call and its tags...), the families read from the contract's
links: a walk over one family follows each of its links within a few steps, where a walk over the
whole contract would spend its steps on the other families, more so with every group added.

The settings, and the reason for each departure from the defaults, are in schemathesis.toml.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from api.contract import operations
from tests.conftest import ROOT

CONFIG = Path(__file__).with_name("schemathesis.toml")
MIN_WALKS, WALKS_PER_LINK = 20, 3


def link_families() -> list[list[str]]:
    """The operation ids joined by links (a link's source and its target in one family), each
    family in contract order; operations without links belong to none."""
    parent: dict[str, str] = {}

    def root(op_id: str) -> str:
        while parent.setdefault(op_id, op_id) != op_id:
            op_id = parent[op_id]
        return op_id

    for op in operations():
        for response in op.spec["responses"].values():
            for link in response.get("links", {}).values():
                parent[root(link["operationId"])] = root(op.operation_id)
    order = [op.operation_id for op in operations()]
    families: dict[str, list[str]] = {}
    for op_id in sorted(parent, key=order.index):
        families.setdefault(root(op_id), []).append(op_id)
    return list(families.values())


def family_links(family: list[str]) -> list[str]:
    ops = {op.operation_id: op for op in operations()}
    return [name for op_id in family for response in ops[op_id].spec["responses"].values()
            for name in response.get("links", {})]


def schemathesis(live_server, env, work: Path, name: str, phases: str, *filters: str) -> tuple[dict, str]:
    report = work / f"{name}.json"
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG),
        "run", f"{live_server.url}/api/v2/openapi.json",
        # Every check runs (schemathesis's default); the file turns one off where it cannot apply.
        "--phases", phases, "--report", "json", "--report-json-path", str(report), *filters,
    ]
    # The working directory takes whatever schemathesis leaves behind.
    run = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=600)
    # The server's log holds the traceback behind any 500.
    server_logs = "".join(log.read_text()[-20_000:] for log in work.glob("server-*.log"))
    output = f"[{name}]\n" + run.stdout + run.stderr + "\n--- server log ---\n" + server_logs
    assert run.returncode == 0, output
    summary = json.loads(report.read_text())
    assert summary["complete"] and summary["failures"] == [] and summary["errors"] == [], output
    assert all(phase["status"] in ("success", "skip") for phase in summary["phases"].values()), output
    return summary, output


def test_schemathesis_finds_no_failures(live_server, tmp_path):
    owner = live_server.admin("bootstrap", "--workspace", "w", "--email", "a@example.com")
    env = {**os.environ, "TEST_API_TOKEN": owner["token"], "TEST_WORKSPACE_ID": owner["workspaceId"],
           "TEST_USER_ID": owner["userId"], "SCHEMATHESIS_HOOKS": "tests.openapi.schemathesis_hooks",
           "PYTHONPATH": str(ROOT)}
    summary, output = schemathesis(live_server, env, tmp_path, "generated", "examples,coverage,fuzzing")
    # A clean exit proves little if the requests never got past authorization or creation.
    assert summary["operations"]["tested"] == summary["operations"]["total"] == len(operations()), output
    # Every operation reached its handler: those without ids in the path answered 2xx to generated
    # requests; those with ids are the target of a link, which the stateful phase follows (below).
    link_targets = {link["operationId"] for op in operations() for response in op.spec["responses"].values()
                    for link in response.get("links", {}).values()}
    for operation in operations():
        if any(p["in"] == "path" for p in operation.parameters):
            assert operation.operation_id in link_targets, f"{operation.operation_id}: no link leads to it"
            continue
        label = f"{operation.method.upper()} {operation.path}"
        rates = summary["valid_rates"].get(label, {})
        assert sum(phase["accepted"] for phase in rates.values()) > 0, f"{label} never answered 2xx: {rates}"

    families = link_families()
    assert families
    for family in families:
        filters = [arg for op_id in family for arg in ("--include-operation-id", op_id)]
        # Walks in proportion to the links to follow: a few per link reach each one.
        walks = max(MIN_WALKS, WALKS_PER_LINK * len(family_links(family)))
        clear_webhook_subscriptions(live_server, owner)
        _, output = schemathesis(live_server, env, tmp_path, f"stateful-{family[0]}", "stateful", *filters,
                                 "--max-examples", str(walks))
        links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected", output)
        assert links and int(links[1]) == int(links[2]) > 0, output


def clear_webhook_subscriptions(live_server, owner) -> None:
    """A workspace holds at most 100 subscriptions, and the earlier phases may have made that many:
    a walk must be able to create one, to follow the links from it."""
    import httpx
    with httpx.Client(base_url=live_server.url + "/api/v2", headers={"Authorization": f"Bearer {owner['token']}"},
                      params={"workspaceId": owner["workspaceId"]}, timeout=30) as client:
        while ids := [s["id"] for s in client.get("/webhooks/subscriptions", params={"limit": 100}).json()
                      ["data"]["result"]["subscriptions"]]:
            for subscription_id in ids:
                assert client.delete(f"/webhooks/subscriptions/{subscription_id}").status_code == 200
