"""Work started at once in several threads or processes, its results collected or its errors reported."""

from __future__ import annotations

import multiprocessing
import threading

# How long the main process waits for a worker process's report.
WORKER_TIMEOUT_S = 120


def run_threads(count: int, target) -> list:
    """``target(index)`` in ``count`` threads started together; their results in index order.
    An exception in a thread is its result, so that the test reports it instead of a hang."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = target(index)
        except BaseException as exc:  # reported by the test
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=WORKER_TIMEOUT_S)
    assert not any(thread.is_alive() for thread in threads), "a thread is still running"
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, f"{len(errors)} thread(s) failed, the first with {errors[0]!r}"
    return results


def run_processes(target, url: str, data_dir: str, processes: int, threads: int, args_of) -> list:
    """``target`` in ``processes`` spawned processes released together; their reports."""
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=target, args=(url, data_dir, threads, args_of(p), start, results))
               for p in range(processes)]
    for worker in workers:
        worker.start()
    try:
        start.set()
        reports = [results.get(timeout=WORKER_TIMEOUT_S) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
    errors = [detail for status, detail in reports if status != "ok"]
    assert not errors, errors
    return [detail for _, detail in reports]


def drain(worker, wait_s: float = 0.0) -> int:
    """A claiming worker's work (api.claiming_threads) done in this thread, as its threads do it:
    every due job claimed and worked on until none is due; with ``wait_s``, until none has been due
    for that long (a failed attempt is due again after a short delay). Returns the claims worked."""
    import time

    from models.kernel.db import session
    worked, idle_since = 0, time.monotonic()
    while True:
        with session():
            job = worker.claim()
        if job is not None:
            worker.work(job)
            worked, idle_since = worked + 1, time.monotonic()
        elif time.monotonic() - idle_since >= wait_s:
            return worked
        else:
            time.sleep(0.02)
