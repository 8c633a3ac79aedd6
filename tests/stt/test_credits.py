"""The speech server debits the seconds it transcribes, file and stream, and, with credits
enforced, refuses new transcriptions of a workspace below zero with 402."""
from __future__ import annotations

import json
import subprocess
import sys

import httpx

from tests.support.servers import ROOT
from tests.support.speech import FIXTURES, jfk_at
from tests.support.speech_server import start_stt, stop_stt
from tests.support.streams import run, session

_LEDGER = """
import json, sys
from core.settings import Settings
from models.billing import credits
from models.kernel.db import open_database, session
from models.identity.tables import Membership
s = Settings.from_env()
open_database(s.database_url, s.data_dir)
with session():
    workspace = Membership.select(Membership.workspace).scalar()
    if len(sys.argv) > 1:
        credits.grant(workspace_id=workspace, credits=int(sys.argv[1]), description="test", created_by="test")
    entries = credits.list_entries(workspace_id=workspace, limit=100, offset=0).items
    print(json.dumps({"balance": credits.balance(workspace), "sum": credits.ledger_sum(workspace),
                      "entries": [[e.kind, e.amount, e.quantity, e.description] for e in entries]}))
"""


def ledger(env: dict, grant: int | None = None) -> dict:
    """The workspace's ledger, read (and granted to) by another process, as a second host would."""
    args = [sys.executable, "-c", _LEDGER] + ([str(grant)] if grant else [])
    return json.loads(subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout)


def _transcribe(server):
    with (FIXTURES / "jfk.wav").open("rb") as audio:
        return httpx.post(server.url + "/v1/audio/transcriptions", headers=server.headers,
                          files={"file": ("jfk.wav", audio, "audio/wav")}, data={"model": "whisper-1"}, timeout=120)


def test_transcriptions_are_debited_and_refused_below_zero(tmp_path, converted_model):
    server = start_stt(tmp_path, converted_model, CREDITS_ENFORCED="true")
    try:
        assert _transcribe(server).status_code == 200  # from zero: allowed, and now below it
        first = ledger(server.env)
        # jfk.wav holds 11.0 s: 11 started seconds.
        assert first["entries"] == [["transcription", -11, 11.0, "file transcription"]]
        assert first["balance"] == first["sum"] == -11
        refused = _transcribe(server)
        assert refused.status_code == 402
        error = refused.json()["error"]
        assert error["code"] == "insufficient_quota" and "below zero" in error["message"]
        assert ledger(server.env, grant=11)["balance"] == 0  # back to zero: allowed again
        frames = run(session(server.url, server.token, jfk_at(16000)[:16000 * 2 * 3], speed=4.0))
        assert frames["close"] == 1000
        after = ledger(server.env)
        assert after["entries"][0][:2] == ["transcription", -3] and after["entries"][0][3] == "stream transcription"
        assert after["balance"] == after["sum"] == -3
    finally:
        stop_stt(server)
