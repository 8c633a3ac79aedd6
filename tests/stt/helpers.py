"""Scene-setting for speech tests: API keys made straight in the shared database."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

_MAKE_KEY = """
import json, sys
from api.settings import Settings
from models.db import database, open_database
from models.api_keys import create_api_key
from models.credentials import Principal
from models.permissions import ROLES
args = json.loads(sys.argv[1])
s = Settings.from_env()
open_database(s.database_url, s.data_dir)
owner = Principal("op", "access_token", args["userId"], args["workspaceId"], ROLES["owner"])
with database.connection_context():
    rate = {"requestsPerMinute": args["rate"][0], "requestsPerDay": args["rate"][1]} if args["rate"] else None
    _, secret = create_api_key(owner, workspace_id=args["workspaceId"], name="stt", user_id=args["userId"], rate_limit=rate)
print(secret)
"""


def make_key(env: dict, owner: dict, rate_limit: tuple[int, int] | None = None) -> str:
    """An API key for the bootstrapped ``owner`` in the server's database (separate process: the
    server owns the SQLite file, and this is what a second host would do)."""
    out = subprocess.run([sys.executable, "-c", _MAKE_KEY, json.dumps({**owner, "rate": rate_limit})],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip()
