"""A real speech server process for a test, and API keys made in its database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.servers import ROOT, LiveServer, free_port, spawn, stop_server


@dataclass
class SttServer(LiveServer):
    token: str

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}


def start_stt(data_dir: Path, model: Path, **env_overrides) -> SttServer:
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "STT_PORT": str(port), "DATA_DIR": str(data_dir),
           "STT_MODEL_PATH": str(model), "LOG_LEVEL": "WARNING", **{k: str(v) for k, v in env_overrides.items()}}
    env.pop("DATABASE_URL", None)
    url = f"http://127.0.0.1:{port}"
    process = spawn("stt.server", env, data_dir / f"stt-{port}.log", url + "/ready", 90)
    server = SttServer(url, env, process, token="")
    server.token = server.admin("bootstrap", "--workspace", "w", "--email", f"owner-{port}@example.com")["token"]
    return server


stop_stt = stop_server

_MAKE_KEY = """
import json, sys
from core.settings import Settings
from models.kernel.db import open_database
from models.identity.rate_limits import Limit
from tests.support import factories
args = json.loads(sys.argv[1])
s = Settings.from_env()
open_database(s.database_url, s.data_dir)
owner = factories.Actor(args["workspaceId"], args["userId"], "", "")
key = factories.api_key(owner, rate_limit=Limit(*args["rate"]) if args["rate"] else None,
                        permissions=args["permissions"])
print(key.secret)
"""


def make_key(env: dict, owner: dict, rate_limit: tuple[int, int] | None = None,
             permissions: list[str] | None = None) -> str:
    """An API key for the bootstrapped ``owner`` in the server's database (separate process: the
    server owns the SQLite file, and this is what a second host would do)."""
    out = subprocess.run([sys.executable, "-c", _MAKE_KEY, json.dumps({**owner, "rate": rate_limit, "permissions": permissions})],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip()
