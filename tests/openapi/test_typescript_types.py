"""TypeScript types generated from the served contract with openapi-typescript compile under
``tsc --strict``, and say what the answers hold: a program that reads a list's pagination, an
error's message and a list's query parameters type-checks, and one that misuses them does not.

The two tools are pinned in tests/openapi/typescript (package.json and its lock file); CI installs
them with ``npm ci --prefix tests/openapi/typescript``.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.skips import skip_or_fail

TOOLS = Path(__file__).with_name("typescript")
BIN = TOOLS / "node_modules" / ".bin"

# Types read through the paths, as a client of one operation reads them. Each @ts-expect-error
# line must be an error for the program to compile: types that said nothing (any) would fail it.
USAGE = """\
import type { paths } from "./contract";

type ListApiKeys = paths["/api-keys"]["get"];
type Page = ListApiKeys["responses"][200]["content"]["application/json"];
type NotFound = paths["/api-keys/{apiKeyId}"]["get"]["responses"][404]["content"]["application/json"];
type Query = ListApiKeys["parameters"]["query"];

export function pages(body: Page): number {
  const { total, limit } = body.data.result.pagination;
  return Math.ceil(total / limit);
}

export function names(body: Page): string[] {
  return body.data.result.apiKeys.map((key) => key.name);
}

export function explain(body: NotFound): string {
  return body.success ? "unexpected" : body.data.message;
}

export const firstPage: Query = { workspaceId: "4f1d6a0e-9c1b-4e3a-8f52-1b2c3d4e5f60", limit: 20, offset: 0 };

// @ts-expect-error limit is a number
export const wrongLimit: Query = { workspaceId: "4f1d6a0e-9c1b-4e3a-8f52-1b2c3d4e5f60", limit: "20" };

export function wrongField(body: Page): number {
  // @ts-expect-error pagination has no field "count"
  return body.data.result.pagination.count;
}
"""


def test_generated_typescript_types_compile_under_strict(live_server, tmp_path):
    if shutil.which("node") is None or not (BIN / "openapi-typescript").exists() or not (BIN / "tsc").exists():
        skip_or_fail("openapi-typescript and typescript are not installed: "
                     "npm ci --prefix tests/openapi/typescript (needs Node.js and npm)")
    generate = subprocess.run([str(BIN / "openapi-typescript"), f"{live_server.url}/api/v2/openapi.json",
                               "--output", str(tmp_path / "contract.d.ts")],
                              capture_output=True, text=True, timeout=300)
    assert generate.returncode == 0, generate.stdout + generate.stderr
    assert "export interface paths" in (tmp_path / "contract.d.ts").read_text()
    (tmp_path / "usage.ts").write_text(USAGE)
    check = subprocess.run([str(BIN / "tsc"), "--strict", "--noEmit", "--noUnusedLocals", "--target", "es2022",
                            "--module", "commonjs", "contract.d.ts", "usage.ts"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
