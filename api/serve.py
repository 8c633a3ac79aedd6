"""Starts the management API (uvicorn, $WORKERS processes) on $HOST:$API_PORT and, beside it, the
speech server (one process, engine threads inside) on $HOST:$STT_PORT.

Every process this one starts ends with it, however it ends (``kill -9`` included): the speech
server and each uvicorn worker ask the kernel for SIGTERM when their parent dies, so no orphan
keeps the port or the database's connections. Responses name no server software.
"""
from __future__ import annotations

import argparse
import ctypes
import logging
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import uvicorn

from api import connection_balance
from api.app import create_app
from core.boot import boot
from core.metrics import prepare_multiprocess
from core.settings import Settings


def main(argv: list[str] | None = None) -> None:
    # No options: everything is configured by the environment (README: Configuration); --help says so.
    argparse.ArgumentParser(prog="scripts/serve", description=__doc__,
                            epilog="Configured by environment variables only: see README, Configuration.",
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    settings = Settings.from_env()
    # Migrate once here, before the workers start; each worker then finds the schema current.
    boot(settings)
    logging.getLogger("api.serve").info("management API on http://%s:%d/api/v2 (docs: /api/v2/ui/)",
                                        settings.host, settings.api_port)
    # uvicorn re-raises SIGTERM once it has shut down; as an exception it lets the finally below run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # The speech server inherits this environment, so both share the database and settings.
    speech = subprocess.Popen([sys.executable, "-m", "stt.server"], preexec_fn=_die_with_parent) \
        if settings.stt_enabled else None
    # Several workers share their metrics through files (see core.metrics), and a table of how many
    # connections each holds, so that they stay spread (api.connection_balance). Set after the
    # speech server started, which is one process and keeps its own.
    shared_dir = Path(tempfile.mkdtemp(prefix="api-workers-")) if settings.workers > 1 else None
    if shared_dir is not None:
        prepare_multiprocess(shared_dir / "metrics")
        connection_balance.prepare(shared_dir / "connections", settings.workers)
    try:
        # Several workers are processes uvicorn spawns, each building its app with worker_app.
        app = "api.serve:worker_app" if settings.workers > 1 else "api.app:create_app"
        uvicorn.run(app, factory=True, host=settings.host, port=settings.api_port,
                    workers=settings.workers, access_log=False, log_level=settings.log_level.lower(),
                    timeout_graceful_shutdown=settings.shutdown_timeout_s, server_header=False,
                    # The client address, which the limit of requests without a credential counts
                    # (api.authorization), from X-Forwarded-For only when the peer is a proxy named here.
                    proxy_headers=True, forwarded_allow_ips=settings.forwarded_allow_ips,
                    # Our own log configuration (core.boot: LOG_FORMAT) for uvicorn's lines too.
                    log_config=None,
                    # uvicorn bounds neither the time nor the size of a request's head (slow or idle
                    # clients would hold connections for ever): API_HEAD_TIMEOUT_S, API_MAX_HEAD_BYTES.
                    http="api.http_protocol:HeadLimitedHttpToolsProtocol")
    finally:
        if shared_dir is not None:
            shutil.rmtree(shared_dir, ignore_errors=True)
        if speech is not None:
            speech.terminate()
            try:
                # Its own shutdown takes up to SHUTDOWN_TIMEOUT_S; a little more for the last answers.
                speech.wait(timeout=settings.shutdown_timeout_s + 5)
            except subprocess.TimeoutExpired:
                speech.kill()


def worker_app():
    """The app of one uvicorn worker process, which stops (gracefully, on SIGTERM) when the
    process that spawned it dies."""
    parent = multiprocessing.parent_process()
    _die_with_parent()
    if parent is not None and os.getppid() != parent.pid:
        # The parent died before the request above was made: the kernel will not send the signal.
        signal.raise_signal(signal.SIGTERM)
    connection_balance.join()
    return create_app()


def _die_with_parent() -> None:
    """In the child: be sent SIGTERM if this process dies without stopping it (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


if __name__ == "__main__":
    main()
