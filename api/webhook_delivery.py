"""One signed POST of a webhook event, as safe as a request to a stranger's URL must be.

- Signed as the Standard Webhooks specification says, by its reference library: ``webhook-id``
  (the event's id, the same in every attempt, for the receiver's dedup), ``webhook-timestamp``
  and ``webhook-signature`` (``v1,<base64 HMAC-SHA256 of id.timestamp.body>``, one per secret
  that signs now: two while a rotated-out secret is in its grace period).
- The payload's ``timestamp`` is when this attempt was sent.
- The host is resolved, every address checked (models.webhooks.addresses), and the connection
  made to a checked address, in one step (models.webhooks.connections): a name cannot resolve to a public
  address for the check and to a private one for the connection.
- Connect within CONNECT_TIMEOUT_S, everything (resolution, TLS, request, answer) within the
  total timeout, enforced on every read and write; no redirects followed (a 3xx is a failure), no
  proxy from the environment, at most RESPONSE_KEEP_BYTES of the answer read.
- No secret and no URL (its query may hold the receiver's token) in an error or a log line.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

import httpcore
import orjson
from standardwebhooks.webhooks import Webhook

from models.webhooks import addresses
from models.webhooks.connections import Expired, GuardedBackend, tls
from models.webhooks.outbox import RESPONSE_KEEP_BYTES, Outcome

CONNECT_TIMEOUT_S = 5.0
USER_AGENT = "voice-agent-backend-webhooks/1"
# How an error of ``exchange`` begins when the address rules refused the host: nothing was sent,
# and sending again would be refused again.
NOT_SENT = "Not sent: "


def signed_request(event_id: str, payload: dict, secrets: list[str], sent_at: datetime) -> tuple[bytes, dict]:
    """The body and headers of one attempt."""
    body = orjson.dumps({**payload, "timestamp": sent_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")})
    text = body.decode()
    signatures = " ".join(Webhook(secret).sign(event_id, sent_at, text) for secret in secrets)
    return body, {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": event_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": signatures,
    }


def post(url: str, event_id: str, payload: dict, secrets: list[str], *, timeout_s: float) -> Outcome:
    """One attempt; never raises for what the receiver or the network does."""
    sent_at = datetime.now(timezone.utc)
    started = time.monotonic()
    body, headers = signed_request(event_id, payload, secrets, sent_at)
    return exchange("POST", url, headers, body, timeout_s=timeout_s, sent_at=sent_at, started=started)


def exchange(method: str, url: str, headers: dict, body: bytes | None, *, timeout_s: float,
             sent_at: datetime | None = None, started: float | None = None) -> Outcome:
    """One request under the same rules as a webhook's (checked addresses, bounded time, no
    redirect, at most RESPONSE_KEEP_BYTES of the answer); never raises for what the other end or
    the network does, and names neither the URL nor a header in its error."""
    sent_at = sent_at or datetime.now(timezone.utc)
    started = time.monotonic() if started is None else started
    deadline = started + timeout_s
    status, kept, error = None, None, None
    try:
        backend = GuardedBackend(deadline)
        with httpcore.ConnectionPool(ssl_context=tls(), network_backend=backend, max_connections=1,
                                     max_keepalive_connections=0, retries=0) as pool:
            timeouts = {"connect": min(CONNECT_TIMEOUT_S, timeout_s), "read": timeout_s, "write": timeout_s,
                        "pool": timeout_s}
            with pool.stream(method, url, headers=list(headers.items()), content=body,
                             extensions={"timeout": timeouts}) as response:
                status = response.status
                received = bytearray()
                for chunk in response.iter_stream():
                    received += chunk
                    if len(received) >= RESPONSE_KEEP_BYTES:
                        break
                kept = _text(bytes(received[:RESPONSE_KEEP_BYTES]))
    except addresses.Refused as exc:
        error = f"{NOT_SENT}{exc}"
    except Expired:
        error = f"No complete answer within {timeout_s:g} s."
    except httpcore.ConnectTimeout:
        error = f"The connection was not made within {min(CONNECT_TIMEOUT_S, timeout_s):g} s."
    except (httpcore.ReadTimeout, httpcore.WriteTimeout, httpcore.PoolTimeout):
        error = f"No complete answer within {timeout_s:g} s."
    except httpcore.ConnectError as exc:
        error = f"The connection failed: {_reason(exc)}."
    except (httpcore.ReadError, httpcore.WriteError, httpcore.RemoteProtocolError) as exc:
        error = f"The receiver broke off the exchange: {_reason(exc)}."
    except httpcore.UnsupportedProtocol:
        error = "The URL's scheme is not http or https."
    except httpcore.ProtocolError as exc:
        error = f"The answer was not valid HTTP: {_reason(exc)}."
    except OSError as exc:
        error = f"The connection failed: {_reason(exc)}."
    latency_ms = (time.monotonic() - started) * 1000
    succeeded = error is None and status is not None and 200 <= status < 300
    if error is None and not succeeded:
        error = f"The receiver answered {status}" + (" (redirects are not followed)." if 300 <= status < 400 else ".")
    return Outcome(sent_at.replace(tzinfo=None), succeeded, status, latency_ms, error, kept)


def _text(data: bytes) -> str:
    # PostgreSQL's text holds no NUL; the log shows what came, readable.
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:300]
