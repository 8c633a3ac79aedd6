"""A process's children and descendants, read from /proc; waiting for a condition."""

from __future__ import annotations

import time
from pathlib import Path


def children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def descendants(pid: int) -> set[int]:
    found = children(pid)
    for child in list(found):
        found |= descendants(child)
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()
