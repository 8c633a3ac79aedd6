"""uvicorn's httptools protocol with a deadline and a size bound for every request head.

uvicorn waits for a request's line and headers for ever (its keep-alive timeout starts only after
a response, and any byte cancels it), and httptools buffers a header of any size: a client that
opens connections and sends nothing, or one byte now and then, or a header of many megabytes,
holds a connection and memory as long as it likes. Here:

- a head must be complete within API_HEAD_TIMEOUT_S of the connection opening or, on a kept-alive
  connection, of the previous exchange ending (its response sent and its body read: where uvicorn
  arms its keep-alive timer). Bytes arriving do not move the deadline. Past it: 408 and close; a
  kept-alive connection on which no byte of a next request has come is closed without an answer,
  as uvicorn's keep-alive closes it (a client may be sending its next request at that moment, and
  would read an unasked 408 as the answer to it).
- a head (request line and header lines with their CRLFs, through the blank line that ends them,
  as received) over API_MAX_HEAD_BYTES gets 431 and the connection closed, as soon as its first
  byte past the bound arrives: the parser never sees more than the bound.
- a head the parser refuses (a control character in the request line or a header) gets 400, in
  the envelope as every other error of the API, where uvicorn would answer in plain text.

With several workers, each connection counts in this worker's share (api.connection_balance): a
request that arrives while this worker holds two or more connections more than another may be
answered with ``Connection: close``. Only a request without a body, alone on its connection: a
body left unread when the connection closes could reset the connection before the client reads
the answer, and a pipelined request behind it would go unanswered.

A protocol instance is made per connection by uvicorn, which passes only its own config; the
settings are read from the environment once per process (each worker inherits it).
"""
from __future__ import annotations

import functools
import logging
from asyncio import TimerHandle
from dataclasses import dataclass

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from core.settings import Settings

from . import connection_balance
from .envelope import MALFORMED_REQUEST, error_body
from .metrics import BALANCING_CLOSES

log = logging.getLogger("api.http")


@dataclass(frozen=True)
class _Limits:
    head_timeout_s: float
    max_head_bytes: int


@functools.cache
def _limits() -> _Limits:
    settings = Settings.from_env()
    return _Limits(settings.api_head_timeout_s, settings.api_max_head_bytes)


class HeadLimitedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        limits = _limits()
        self.head_timeout_s = limits.head_timeout_s
        self.max_head_bytes = limits.max_head_bytes
        self._head_deadline: TimerHandle | None = None
        # Bytes fed to the parser count against the bound from the end of one message (or the
        # connection's start) until the next one's headers are complete.
        self._head_pending = True
        self._head_bytes = 0
        # Between a message's first byte and its end: tells a started request from an idle connection.
        self._in_message = False
        self._worker = connection_balance.this_worker()

    # --- the connection -------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if self._worker is not None:
            self._worker.opened()
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        self._leave_share()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        self._leave_share()  # the connection is the WebSocket protocol's from now on
        super().handle_websocket_upgrade()

    def _leave_share(self) -> None:
        if self._worker is not None:
            self._worker.closed()
            self._worker = None

    def data_received(self, data: bytes) -> None:
        while self._head_pending and len(data) > self.max_head_bytes - self._head_bytes:
            # Feed only up to the bound: a small head followed by a body in the same read is
            # fine, and a head still incomplete at the bound is over it.
            room = self.max_head_bytes - self._head_bytes
            self._head_bytes = self.max_head_bytes
            if room:
                super().data_received(data[:room])
                if self.transport.is_closing() or self.transport.get_protocol() is not self:
                    return  # a malformed request (400) or a WebSocket upgrade took over
            if self._head_pending and self._head_bytes >= self.max_head_bytes:
                log.info("request head from %s over %d bytes: 431", self._peer(), self.max_head_bytes)
                self._refuse(431, f"The request line and headers are larger than the limit of "
                                  f"{self.max_head_bytes} bytes.")
                return
            # The head ended within the bound; what follows is its body or a next request, whose
            # head was reset to count from its start by on_message_complete (the bytes of a next
            # head within this read before the reset go uncounted: at most one read).
            data = data[room:]
        if self._head_pending:
            self._head_bytes += len(data)
        super().data_received(data)

    # --- parser callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._in_message = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_pending = False
        self._cancel_head_deadline()
        previous = self.cycle
        super().on_headers_complete()
        if (self._worker is not None and self.cycle is not previous and not self.pipeline
                and self._worker.should_close() and not _has_body(self.scope["headers"])):
            # Answered in full, then closed: the client's next connection may go to another worker.
            self.cycle.keep_alive = False
            BALANCING_CLOSES.inc()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_message = False
        self._head_pending = True
        self._head_bytes = 0
        if self.parser.should_upgrade() and self._should_upgrade():
            return
        # The app answered before reading the whole body: the exchange ends only now. (uvicorn's
        # keep-alive timer was cancelled by the body's bytes and is not armed again.)
        if self.cycle is not None and self.cycle.response_complete and not self.pipeline:
            self._arm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn armed its keep-alive timer: nothing is queued and the connection stays open.
        if self.timeout_keep_alive_task is not None and not self._in_message:
            self._arm_head_deadline()

    # --- the deadline ---------------------------------------------------------------------

    def _arm_head_deadline(self) -> None:
        if self.transport.is_closing():
            return
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self._in_message:
            self.transport.close()  # idle after an exchange: as uvicorn's keep-alive closes it
            return
        log.debug("request head from %s not complete within %g s: 408", self._peer(), self.head_timeout_s)
        self._refuse(408, f"The request line and headers did not arrive within {self.head_timeout_s:g} s.")

    # --- the answer -----------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        """What httptools refuses to parse (a NUL or another control character in the request line
        or a header, a malformed line): uvicorn answers in plain text, the API in its envelope."""
        self._refuse(400, "The request is not valid HTTP/1.1: its request line or a header holds a character "
                          "or a form the protocol does not allow.", code=MALFORMED_REQUEST)

    def _refuse(self, status: int, message: str, code: str | None = None) -> None:
        """Answers in the API's error envelope and closes: the rest of the request is never read,
        so the connection cannot be used again."""
        self._cancel_head_deadline()
        body = error_body(status, message, code)
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend([b"content-type: application/json\r\n",
                        b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                        b"connection: close\r\n", b"\r\n", body])
        self.transport.write(b"".join(content))
        self.transport.close()

    def _peer(self) -> str:
        return "%s:%d" % self.client if self.client else "a client"


def _has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False
