"""The held-out speech set and its benchmark: the committed clips are the ones transcripts.json and
scripts/make_heldout_audio describe, the conditions come out the same from the same seed, numbers
score alike however they are written, and scripts/bench_accuracy runs end to end on one clip."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchmarks import heldout, make_heldout_audio  # noqa: E402

from tests.support.servers import ROOT  # noqa: E402


def test_every_listed_clip_is_present_decodes_and_has_its_text():
    from stt.audio import decode

    listed = heldout.entries()
    assert sorted(e["file"] for e in listed) == sorted(p.name for p in heldout.HELDOUT.glob("*.flac"))
    words = 0
    for entry in listed:
        samples = decode(heldout.HELDOUT / entry["file"])
        assert entry["text"].strip(), entry["file"]
        assert abs(samples.size / heldout.SAMPLE_RATE - entry["seconds"]) < 0.05, entry["file"]
        assert 5 <= entry["seconds"] <= 20, entry["file"]
        words += len(entry["text"].split())
    assert 2000 <= words <= 3000


def test_the_committed_set_is_what_the_generator_plans():
    # A text edited in the generator without the set made again would score against stale audio.
    planned = make_heldout_audio.plan()
    listed = [{key: value for key, value in e.items() if key != "seconds"} for e in heldout.entries()]
    assert listed == planned


def test_limit_spreads_over_the_set_and_keeps_jfk():
    clips = heldout.load(limit=3)
    assert clips[0].name == "jfk.wav"
    assert len(clips) == 3
    assert clips[-1].name == heldout.entries()[-1]["file"]


def test_conditions_are_the_same_for_the_same_seed():
    clips = heldout.load(limit=4)
    for name in ("noise", "telephone"):
        first, again = heldout.condition(name, clips, seed=0), heldout.condition(name, clips, seed=0)
        other = heldout.condition(name, clips, seed=1)
        for a, b, c, clean in zip(first, again, other, clips):
            assert np.array_equal(a.samples, b.samples)
            assert not np.array_equal(a.samples, c.samples)
            assert a.samples.dtype == np.float32 and abs(a.seconds - clean.seconds) < 0.01
            assert a.text == clean.text


def test_pauses_join_clips_and_their_texts():
    clips = heldout.load(limit=12)
    streams = heldout.condition("pauses", clips)
    assert " ".join(s.text for s in streams) == " ".join(c.text for c in clips)
    assert all(s.seconds <= heldout.STREAM_SECONDS + 25 for s in streams)
    gaps = sum(s.seconds for s in streams) - sum(c.seconds for c in clips)
    joins = len(clips) - len(streams)
    assert joins * heldout.PAUSE_SECONDS[0] <= gaps <= joins * heldout.PAUSE_SECONDS[1]


@pytest.mark.parametrize("spoken, written", [
    ("four five six seven", "4567"),
    ("the fourteenth of March at three thirty", "the 14th of March at 3:30"),
    ("nineteen eighty seven", "1987"),
    ("two hundred and fifty years", "250 years"),
    ("twenty two Maple Avenue", "22 Maple Avenue"),
    ("five five five, two one three", "555-213"),
])
def test_numbers_score_alike_however_written(spoken, written):
    assert heldout.score_words(spoken) == heldout.score_words(written)
    assert heldout.edits(spoken, written) == 0


def test_a_misheard_number_still_counts():
    assert heldout.edits("four five six seven", "4568") == 1
    assert heldout.score_words("twenty two") != heldout.score_words("twenty two two")


def test_bench_accuracy_runs_on_one_clip():
    command = [sys.executable, str(ROOT / "scripts" / "bench_accuracy"), "--weights", "f16", "--paths", "file",
               "--conditions", "clean", "--limit", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    row = next(line for line in done.stdout.splitlines() if line.startswith("| clean | f16 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2:4] == ["1", "22"]  # jfk.wav: 22 reference words
    assert float(cells[5].rstrip(" %")) <= 10
    assert "Command: `scripts/bench_accuracy --weights f16" in done.stdout
