"""A claimed job's lease, renewed on a thread of its own while the work lasts (api.claiming_threads
HeldLease): what the work asks of the claim meanwhile sees the token the row holds."""
from __future__ import annotations

import logging
import threading

from api.claiming_threads import HeldLease


def test_a_check_made_while_a_renewal_is_written_sees_the_renewed_token(db):
    row = {"token": 1}
    written, handed_over = threading.Event(), threading.Event()

    def renew(token: int) -> int:
        # The row's token moves on, and the new one reaches the holder only a little later: the
        # window in which a check against the old one took the renewal for a takeover.
        row["token"] = token + 1
        written.set()
        handed_over.wait(0.5)
        return token + 1

    seen: list[bool] = []
    with HeldLease(1, renew, 0.03, logging.getLogger("test"), "a test job") as held:
        assert written.wait(5)
        checking = threading.Thread(target=lambda: seen.append(held.check(lambda token: token == row["token"])))
        checking.start()
        # The check runs inside the window (it would see the old token at once) or waits it out.
        checking.join(0.2)
        handed_over.set()
        checking.join(5)
    assert seen == [True]
