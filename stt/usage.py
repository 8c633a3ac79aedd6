"""What the speech server records of its use: seconds of audio transcribed, debited from the
caller's workspace credits (models.billing.credits), file and stream alike.

A debit that cannot be written (the database away) is logged, never turned into a failure of a
transcription the client has already been given or is about to be.
"""
from __future__ import annotations

import asyncio
import logging

from models.billing import credits
from models.identity.principal import Principal
from models.kernel.db import session

log = logging.getLogger(__name__)


async def debit(principal: Principal, seconds: float, what: str) -> None:
    def run() -> None:
        with session():
            credits.debit_transcription(workspace_id=principal.workspace_id, seconds=seconds, what=what,
                                        credential_id=principal.credential_id)

    try:
        await asyncio.get_running_loop().run_in_executor(None, run)
    except Exception:
        log.exception("debiting %.3f s of %s transcription from workspace %s failed", seconds, what,
                      principal.workspace_id)
