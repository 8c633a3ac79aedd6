"""The command-line options the benchmarks have in common, each group a parent parser: a benchmark's
parser is ``parser(name, __doc__, postgres(), log_level(), ...)`` plus its own options, so that the
same option has the same name, type, default and meaning in every benchmark.

Each function returns a new parser, so that a benchmark's defaults never leak into another's.
"""
from __future__ import annotations

import argparse
import os

from .harness import csv_ints

# A database on the server where scratch databases are created and dropped; the tests' server when set.
DEFAULT_POSTGRES_URL = os.environ.get("TEST_DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/test"


def parser(name: str, doc: str | None, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser of ``scripts/<name>``: its module docstring as the description, kept as written."""
    return argparse.ArgumentParser(prog=f"scripts/{name}", description=doc, parents=list(parents),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def _group() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def postgres() -> argparse.ArgumentParser:
    group = _group()
    group.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL,
                       help="an existing database, on the server where the run creates and drops its scratch "
                            "databases (default $TEST_DATABASE_URL, else postgresql://postgres@127.0.0.1:5432/test)")
    return group


def log_level(server: str = "the API") -> argparse.ArgumentParser:
    group = _group()
    group.add_argument("--log-level", default="INFO",
                       help=f"{server}'s LOG_LEVEL (default INFO, the service default: one access-log line per "
                            "request)")
    return group


def load_cells(generator: str = "wrk", timeout: str = "per-request timeout") -> argparse.ArgumentParser:
    """A closed loop of keep-alive connections per cell, run by the HTTP load generator ``generator``."""
    group = _group()
    group.add_argument("--duration", type=int, default=8, help="measured whole seconds per cell (default 8)")
    group.add_argument("--cell-warmup", type=int, default=1,
                       help="unrecorded seconds of the same load before each cell (default 1)")
    group.add_argument("--threads", type=int, default=1,
                       help=f"{generator} threads, at most one per connection (default 1)")
    group.add_argument("--timeout", type=int, default=10, help=f"{generator}'s {timeout} in seconds (default 10)")
    group.add_argument(f"--{generator}",
                       help=f"the {generator} binary (default: {generator} on PATH, installed with apt-get if "
                            "missing)")
    return group


def rounds(requests: int, rounds: int | None = None, warmup: int | None = None) -> argparse.ArgumentParser:
    """Requests made in process (or one client's), in rounds whose medians are reported."""
    group = _group()
    group.add_argument("--requests", type=int, default=requests,
                       help=f"measured requests per round or cell (default {requests})")
    if rounds is not None:
        group.add_argument("--rounds", type=int, default=rounds, help=f"rounds (default {rounds})")
    if warmup is not None:
        group.add_argument("--warmup", type=int, default=warmup, help=f"unrecorded requests first (default {warmup})")
    return group


def engine(threads: str = "whisper.cpp threads") -> argparse.ArgumentParser:
    """The speech engine's threads (STT_THREADS, or the engine run in process)."""
    group = _group()
    group.add_argument("--threads", type=int, default=1, help=f"{threads} (default 1, as STT_THREADS)")
    return group


def workers(default: list[int], what: str = "API processes (WORKERS)") -> argparse.ArgumentParser:
    group = _group()
    group.add_argument("--workers", type=csv_ints, default=default,
                       help=f"{what}, comma-separated (default {','.join(map(str, default))})")
    return group
