"""Scene-setting for speech tests: API keys made straight in the shared database."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

_MAKE_KEY = """
import json, sys
from core.settings import Settings
from models.kernel.db import open_database
from models.identity.rate_limits import Limit
from tests import factories
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
