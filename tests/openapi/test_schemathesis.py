"""Schemathesis over the whole contract against a live server: every phase, every check, fixed seed.

The settings, and the reason for each departure from the defaults, are in tests/schemathesis.toml.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from api.contract import operations

CONFIG = Path(__file__).with_name("schemathesis.toml")
PHASES = "examples,coverage,fuzzing,stateful"


def test_schemathesis_finds_no_failures(live_server, tmp_path):
    owner = live_server.admin("bootstrap", "--workspace", "w", "--email", "a@example.com")
    env = {**os.environ, "TEST_API_TOKEN": owner["token"], "TEST_WORKSPACE_ID": owner["workspaceId"],
           "TEST_USER_ID": owner["userId"]}
    report = tmp_path / "report.json"
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG),
        "run", f"{live_server.url}/api/v2/openapi.json",
        # Every check runs (schemathesis's default); the file turns one off where it cannot apply.
        "--phases", PHASES, "--report", "json", "--report-json-path", str(report),
    ]
    # The working directory takes whatever schemathesis leaves behind.
    run = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    # The server's log holds the traceback behind any 500.
    server_logs = "".join(log.read_text()[-20_000:] for log in tmp_path.glob("server-*.log"))
    output = run.stdout + run.stderr + "\n--- server log ---\n" + server_logs
    assert run.returncode == 0, output

    # A clean exit proves little if the requests never got past authorization or creation.
    summary = json.loads(report.read_text())
    assert summary["complete"] and summary["failures"] == [] and summary["errors"] == [], output
    assert summary["operations"]["tested"] == summary["operations"]["total"] == len(operations()), output
    assert all(phase["status"] == "success" for phase in summary["phases"].values()), summary["phases"]
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
    links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected", output)
    assert links and int(links[1]) == int(links[2]) > 0, output
