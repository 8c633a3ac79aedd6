"""Audio that says a vocabulary's terms, and a speech server's workspace customised from another
process: what the end-to-end vocabulary test and scripts/bench_vocabulary share.

Each term is written one way and said another ("ZX-9" is "zed ex nine"), as a workspace's product
names and codes are; eSpeak NG (models.simulations.voice) says a sentence holding its spoken form,
and the reference is the same sentence with its written form.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
import wave

import numpy as np

from tests.support.servers import ROOT

# (written, spoken, a sentence saying it: {} is where the term goes)
TERMS = [
    ("ZX-9", "zed ex nine", "My {} router keeps restarting every night."),
    ("KwikPay", "quick pay", "I paid the invoice with {} yesterday."),
    ("TeleVox", "tele vox", "Please forward this call to the {} team."),
    ("MediSync", "medi sync", "The {} app does not show my appointments."),
    ("Zorblax", "zorblax", "I would like to upgrade my {} subscription."),
    ("Qorvana", "core vana", "Is {} available in my country?"),
    ("BrightLine", "bright line", "Cancel my {} plan from next month."),
    ("Nexora", "nexora", "The {} dashboard shows the wrong balance."),
]


def said(sentence: str, spoken: str) -> str:
    return sentence.format(spoken)


def reference(sentence: str, written: str) -> str:
    return sentence.format(written)


def fillers(count: int) -> list[tuple[str, list[str]]]:
    """``count`` more terms no sentence says, to make a vocabulary of a workspace's size."""
    return [(f"Product {i:03}", [f"product {i}"]) for i in range(count)]


def wav_of(text: str, words_per_minute: int = 120) -> tuple[bytes, float]:
    """``text`` said by eSpeak NG (slowly: tiny.en hears its voice better so), as a 16 kHz 16-bit WAV
    file, and its length in seconds."""
    import soxr

    from models.simulations.voice import synthesise

    audio = synthesise(text, words_per_minute=words_per_minute)
    samples = soxr.resample(audio.samples, audio.sample_rate, 16_000)
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(pcm)
    return out.getvalue(), len(samples) / 16_000


_CUSTOMISE = """
import json, sys
from core.settings import Settings
from models.identity import workspaces
from models.identity.principal import Principal
from models.kernel.db import open_database, session
from models.speech import vocabulary
args = json.loads(sys.argv[1])
s = Settings.from_env()
open_database(s.database_url, s.data_dir)
owner = Principal("customise", "access_token", args["userId"], args["workspaceId"], frozenset())
with session():
    for written, spoken in args.get("terms", []):
        vocabulary.create_term(owner, workspace_id=args["workspaceId"], written=written, spoken=spoken)
    if "filter" in args:
        workspaces.update(workspace_id=args["workspaceId"], settings={"speechFilter": args["filter"]})
"""


def customise(env: dict, owner: dict, *, terms: list | None = None, speech_filter: dict | None = None) -> None:
    """Gives the workspace of ``owner`` ({workspaceId, userId}) these vocabulary terms ([written,
    [spoken...]]) and speech-filter settings, in the database of ``env``, from another process: as
    the management API on a second host would."""
    args = {**owner, "terms": terms or []}
    if speech_filter is not None:
        args["filter"] = speech_filter
    subprocess.run([sys.executable, "-c", _CUSTOMISE, json.dumps(args)], env=env, cwd=ROOT,
                   capture_output=True, text=True, check=True)
