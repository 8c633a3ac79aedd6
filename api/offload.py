"""What async code of the API (handlers and the test-fire that must not hold a handler thread while
they wait) hands to threads."""
from __future__ import annotations

import anyio.to_thread

from models.kernel.db import session


async def in_session(function, /, **kwargs):
    """``function(**kwargs)`` in a worker thread, in a database session of its own."""
    def run():
        with session():
            return function(**kwargs)
    return await anyio.to_thread.run_sync(run)
