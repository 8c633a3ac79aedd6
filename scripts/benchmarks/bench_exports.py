"""Whole-workspace exports: how long the worker takes to write a workspace's zip, and the memory it
holds, as the workspace grows; the same rows read without writing anything as the baseline.

In this process, on SQLite or a scratch PostgreSQL database (--postgres): a workspace holding
--calls calls (each with a tag), then four times as many. For each size, --rounds rounds, each
reading every resource's rows (the baseline) and then writing the export (claim, write, complete);
the median and slowest of each, their ratio, rows per second, the zip's size, and the peak Python
memory a write allocates (tracemalloc): about the same at both sizes, since rows are read and
written a page at a time.

A Markdown table on stdout, progress on stderr.

    scripts/bench_exports [--calls 1000] [--rounds 3] [--postgres] [--postgres-url URL]
"""
from __future__ import annotations

import os
import time
import tracemalloc

from . import options
from .harness import CLEANUP, log, median, scratch_dir, scratch_postgres


def main(argv=None) -> None:
    parser = options.parser("bench_exports", __doc__, options.postgres())
    parser.add_argument("--calls", type=int, default=1000, help="calls of the smaller workspace (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per size (default 3)")
    parser.add_argument("--postgres", action="store_true", help="on a scratch PostgreSQL database (default SQLite)")
    args = parser.parse_args(argv)
    with CLEANUP.guard():
        work = scratch_dir("bench-exports-")
        url = scratch_postgres(args.postgres_url, f"bench_exports_{os.getpid()}") if args.postgres else None
        _boot(url, work)
        print(f"| calls ({'PostgreSQL' if url else 'SQLite'}) | rows | read p50 ms | write p50 ms | write max ms "
              f"| write / read | rows/s | zip KB | peak MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for calls in (args.calls, 4 * args.calls):
            _measure(calls, args.rounds)


def _boot(url, work) -> None:
    os.environ["LOG_LEVEL"] = "WARNING"
    from core.boot import boot
    from core.settings import Settings
    boot(Settings(database_url=url, data_dir=str(work), log_level="WARNING"))


def _measure(calls: int, rounds: int) -> None:
    from models.exports import exports, resources
    from models.kernel.db import session
    from tests.support import factories
    log(f"a workspace of {calls} calls...")
    owner = factories.workspace("Bench")
    for n in range(calls):
        factories.call(owner, tags=[f"tag {n % 7}"], transcript="AI: Hello.\nUser: " + "words " * 40)
    reads, writes, peaks, rows, size = [], [], [], 0, 0
    for _ in range(rounds):
        with session():
            started = time.perf_counter()
            rows = sum(1 for r in resources.exported() for _ in resources.rows(r, owner.workspace_id))
            reads.append((time.perf_counter() - started) * 1000)
        factories.export(owner)
        with session():
            job = exports.claim(600)
            tracemalloc.start()
            started = time.perf_counter()
            path = exports.write(job)
            writes.append((time.perf_counter() - started) * 1000)
            peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()
            exports.complete(job, path)
            size = path.stat().st_size
            exports.delete(workspace_id=owner.workspace_id, export_id=job.export_id)
    read, write = median(reads), median(writes)
    print(f"| {calls} | {rows} | {read:.0f} | {write:.0f} | {max(writes):.0f} | {write / read:.1f} "
          f"| {rows / (write / 1000):.0f} | {size / 1024:.0f} | {max(peaks):.1f} |")
