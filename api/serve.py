"""Starts the management API (uvicorn, $WORKERS processes) on $HOST:$API_PORT and, beside it, the
speech server (one process, engine threads inside) on $HOST:$STT_PORT."""
from __future__ import annotations

import ctypes
import logging
import signal
import subprocess
import sys

import uvicorn

from core.boot import boot
from core.settings import Settings


def main() -> None:
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
    try:
        uvicorn.run("api.app:create_app", factory=True, host=settings.host, port=settings.api_port,
                    workers=settings.workers, access_log=False, log_level=settings.log_level.lower(),
                    timeout_graceful_shutdown=10)
    finally:
        if speech is not None:
            speech.terminate()
            try:
                speech.wait(timeout=10)
            except subprocess.TimeoutExpired:
                speech.kill()


def _die_with_parent() -> None:
    """In the child: be sent SIGTERM if this process dies without stopping it (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


if __name__ == "__main__":
    main()
