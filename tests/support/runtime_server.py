"""A local agent runtime for the sync tests: the webhook receiver (tests/support/webhook_receiver.py)
at a runtime's path, answering on a script, which reads what each push carried (its bearer token
and its JSON body)."""
from __future__ import annotations

from typing import NamedTuple

import orjson

from tests.support.webhook_receiver import Answer, Receiver

__all__ = ["Answer", "Pushed", "Runtime"]


class Pushed(NamedTuple):
    bearer: str | None
    body: dict
    headers: dict


class Runtime(Receiver):
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/configs"

    def pushed(self, count: int, timeout_s: float = 20.0) -> list[Pushed]:
        """The first ``count`` pushes, once they are answered, in the order they came."""
        found = []
        for got in self.wait_for(count, timeout_s):
            authorization = got.headers.get("authorization", "")
            found.append(Pushed(authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None,
                                orjson.loads(got.body), got.headers))
        return found
