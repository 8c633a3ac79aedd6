"""Keeps kept-alive connections spread over the API's worker processes.

The workers share one listening socket, and a connection stays for its whole life with the worker
that accepted it. Which worker accepts is a race between their event loops, so a burst of
connections (a client's pool, a proxy's upstream pool opening) can land all on one: 16 kept-alive
connections to 2 workers were seen split anywhere from 8/8 to 16/0. The busier worker then
queues the requests of all its connections while the other idles, and the whole pool runs at one
worker's rate, with a longer tail.

So each worker writes how many connections it holds into a table all of them share, and a worker
that holds at least two more than the least loaded one answers a request with ``Connection:
close`` (at most one such answer per ``CLOSE_INTERVAL_S`` in each worker). The answer is whole;
the client opens a new connection for its next request, as HTTP/1.1 clients do whenever a server
ends a keep-alive, and the worker with fewer connections, the likelier to be idle in its poll,
is the likelier to accept it. A client whose connections are spread evenly never sees one, nor
does a single connection, nor a single worker (no table: ``WORKERS=1``).

The table is a small file ``api.serve`` makes before the workers start (its path in
``API_CONNECTION_TABLE``), mapped into each worker: one slot per worker, ``[pid, connections]``
as two native int64s. A worker takes a free slot, or a dead process's, under an exclusive lock on
the file; it writes only its own slot (one aligned word: readers see the old value or the new)
and clears it on exit. A worker killed before it clears keeps its slot until its replacement
takes it; a worker about to close a connection for the sake of a peer first checks that the peer
is alive, and frees the slot if not, so a dead worker never draws connections away.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import mmap
import os
from pathlib import Path
from time import monotonic

TABLE_ENV = "API_CONNECTION_TABLE"
CLOSE_INTERVAL_S = 0.025
_WORD = 8
_SLOT = 2 * _WORD

log = logging.getLogger("api.connections")


def prepare(path: Path, workers: int) -> None:
    """In the parent, before any worker starts: an empty table with room for each worker and a
    replacement of each (a worker that restarts may start before the old one has exited)."""
    path.write_bytes(bytes(2 * workers * _SLOT))
    os.environ[TABLE_ENV] = str(path)


class WorkerConnections:
    """This worker's slot in the table, and the decision to close a connection for balance."""

    def __init__(self, path: str) -> None:
        with open(path, "r+b") as file:
            self._map = mmap.mmap(file.fileno(), 0)
        self._path = path
        self._words = memoryview(self._map).cast("q")
        self._slots = len(self._words) // 2
        self._pid = os.getpid()
        self._held = 0
        self._next_close = 0.0
        self._index = self._claim()

    @property
    def joined(self) -> bool:
        return self._index is not None

    def opened(self) -> None:
        self._held += 1
        if self._index is not None:
            self._words[2 * self._index + 1] = self._held

    def closed(self) -> None:
        self._held -= 1
        if self._index is not None:
            self._words[2 * self._index + 1] = self._held

    def should_close(self) -> bool:
        """Whether the request just arrived should be answered with ``Connection: close``: this
        worker holds at least two connections more than another live worker."""
        if self._held < 2 or self._index is None:
            return False
        now = monotonic()
        if now < self._next_close:
            return False
        words, own = self._words, self._index
        least, least_at = self._held, None
        for slot in range(self._slots):
            pid = words[2 * slot]
            if pid and slot != own and words[2 * slot + 1] < least:
                least, least_at = words[2 * slot + 1], slot
        if least_at is None or self._held - least < 2:
            return False
        if not _alive(words[2 * least_at]):
            self._free(least_at)
            return False
        self._next_close = now + CLOSE_INTERVAL_S
        return True

    def leave(self) -> None:
        """On exit: the slot is free for a replacement."""
        if self._index is not None:
            self._free(self._index)
            self._index = None

    # --- the table ------------------------------------------------------------------------

    def _claim(self) -> int | None:
        with self._locked():
            for slot in range(self._slots):
                pid = self._words[2 * slot]
                if pid == 0 or (pid != self._pid and not _alive(pid)):
                    self._words[2 * slot + 1] = 0
                    self._words[2 * slot] = self._pid
                    return slot
        log.warning("no free slot in the connection table %s: this worker does not balance", self._path)
        return None

    def _free(self, slot: int) -> None:
        with self._locked():
            pid = self._words[2 * slot]
            # Under the lock: the slot may have been taken again since it was read.
            if pid == self._pid or (pid and not _alive(pid)):
                self._words[2 * slot] = 0
                self._words[2 * slot + 1] = 0

    @contextlib.contextmanager
    def _locked(self):
        fd = os.open(self._path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    return True


_this_worker: WorkerConnections | None = None


def join() -> None:
    """In a worker, before it serves: take a slot if the parent made a table (several workers)."""
    global _this_worker
    path = os.environ.get(TABLE_ENV)
    if not path or _this_worker is not None:
        return
    worker = WorkerConnections(path)
    if worker.joined:
        _this_worker = worker
        atexit.register(worker.leave)


def this_worker() -> WorkerConnections | None:
    """This worker's slot, or None when it runs alone (or found no slot)."""
    return _this_worker
