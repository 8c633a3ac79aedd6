"""Connections to a stranger's URL (a webhook receiver, an integration's endpoint, a workspace's own
language model endpoint), made only to addresses the policy allows (models.webhooks.addresses): the
host is resolved, every address checked, and the connection made to a checked address in one step,
so that a name cannot resolve to a public address for the check and to a private one for the
connection; every read and write is bounded by one deadline. ``http_client`` gives the same guard
to an httpx client (the chat-completions client's transport).
"""
from __future__ import annotations

import ssl
import time

import httpcore
import httpx

from models.webhooks import addresses

_ssl_context: ssl.SSLContext | None = None


def tls() -> ssl.SSLContext:
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = httpcore.default_ssl_context()
    return _ssl_context


class Expired(Exception):
    """The attempt's total time ran out."""


class GuardedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the policy allows, resolved here, and bounds every read and
    write by the attempt's deadline."""

    def __init__(self, deadline: float) -> None:
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def _left(self, timeout: float | None) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise Expired()
        return left if timeout is None else min(timeout, left)

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        resolved = addresses.addresses(host, port, self._left(timeout))
        last: Exception | None = None
        for address in resolved:
            try:
                stream = self._inner.connect_tcp(address, port, timeout=self._left(timeout),
                                                 local_address=local_address, socket_options=socket_options)
                return GuardedStream(stream, self)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        raise last

    def connect_unix_socket(self, path, timeout=None, socket_options=None):  # pragma: no cover - never asked
        raise httpcore.ConnectError("only TCP connections are made")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class GuardedStream(httpcore.NetworkStream):
    def __init__(self, inner, backend: GuardedBackend) -> None:
        self._inner, self._backend = inner, backend

    def read(self, max_bytes, timeout=None):
        return self._inner.read(max_bytes, self._backend._left(timeout))

    def write(self, buffer, timeout=None):
        self._inner.write(buffer, self._backend._left(timeout))

    def close(self):
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return GuardedStream(self._inner.start_tls(ssl_context, server_hostname, self._backend._left(timeout)),
                              self._backend)

    def get_extra_info(self, info):
        return self._inner.get_extra_info(info)


class _GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over a pool whose connections go through a GuardedBackend: one request's
    connections, no keep-alive, no retries, no proxy from the environment."""

    def __init__(self, deadline: float) -> None:
        super().__init__(retries=0, trust_env=False)
        self._pool = httpcore.ConnectionPool(ssl_context=tls(), network_backend=GuardedBackend(deadline),
                                             max_keepalive_connections=0, retries=0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        # A refusal or the deadline as httpx's own errors, which its clients know how to report.
        try:
            return super().handle_request(request)
        except addresses.Refused as exc:
            raise httpx.ConnectError(f"Not connected: {exc}", request=request) from None
        except Expired:
            raise httpx.TimeoutException("No complete answer in time.", request=request) from None


def http_client(timeout_s: float) -> httpx.Client:
    """An httpx client whose connections are guarded, everything within ``timeout_s`` from now,
    redirects not followed; for one request (its deadline starts at once)."""
    return httpx.Client(transport=_GuardedTransport(time.monotonic() + timeout_s), timeout=timeout_s,
                        follow_redirects=False, trust_env=False)
