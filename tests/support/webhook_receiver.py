"""A real HTTP receiver for outbound webhooks in tests: it answers on a script, verifies each
request's Standard Webhooks signature with the secrets it is told, and records what came and when
(and whether two requests for one webhook-id were ever in flight at once)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Answer:
    status: int = 200
    delay_s: float = 0.0  # before the answer
    body: bytes = b"ok"
    headers: dict = field(default_factory=dict)


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    started: float
    ended: float = 0.0
    verified_with: list = field(default_factory=list)  # indexes of the secrets that verify it


class Receiver:
    def __init__(self, secrets: list[str] = (), script: list[Answer] = ()) -> None:
        self.secrets = list(secrets)
        self.script = list(script)
        self.received: list[Received] = []
        self.overlaps: list[str] = []
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                receiver._handle(self)

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = request.rfile.read(length)
        headers = {k.lower(): v for k, v in request.headers.items()}
        got = Received(request.path, headers, body, time.monotonic())
        for index, secret in enumerate(self.secrets):
            try:
                Webhook(secret).verify(body, headers)
                got.verified_with.append(index)
            except WebhookVerificationError:
                pass
        message_id = headers.get("webhook-id", "")
        with self._lock:
            if self._in_flight.get(message_id):
                self.overlaps.append(message_id)
            self._in_flight[message_id] = self._in_flight.get(message_id, 0) + 1
            answer = self.script.pop(0) if self.script else Answer()
        try:
            if answer.delay_s:
                time.sleep(answer.delay_s)
            request.send_response(answer.status)
            for name, value in answer.headers.items():
                request.send_header(name, value)
            request.send_header("Content-Length", str(len(answer.body)))
            request.end_headers()
            request.wfile.write(answer.body)
        except OSError:
            pass  # the sender gave up waiting
        finally:
            got.ended = time.monotonic()
            with self._arrived:
                self._in_flight[message_id] -= 1
                self.received.append(got)
                self._arrived.notify_all()

    def wait_for(self, count: int, timeout_s: float = 20.0) -> list[Received]:
        """The first ``count`` requests answered, once they are, in the order they arrived;
        AssertionError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.received)} of {count} webhook requests within {timeout_s} s")
                self._arrived.wait(left)
            return sorted(self.received, key=lambda r: r.started)[:count]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
