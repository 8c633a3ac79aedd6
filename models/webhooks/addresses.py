"""Where outbound webhooks may go: the operator's policy and the address rules.

A subscription's URL is https (http only with ``WEBHOOK_ALLOW_HTTP``), and its host must not
lead to this machine or its private network: loopback, private, link-local (where clouds serve
instance metadata and credentials), carrier-grade NAT, multicast, reserved or unspecified
addresses are refused unless ``WEBHOOK_ALLOW_PRIVATE_ADDRESSES`` allows them. The URL is checked
when it is registered and its host resolved again at every delivery, and the delivery connects
to the address it checked (api.webhook_delivery): a name that resolved to a public address at
registration and to 10.0.0.5 later is refused then.
"""
from __future__ import annotations

import ipaddress
import socket
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import NamedTuple
from urllib.parse import urlsplit

from models.kernel.errors import InvalidInput

URL_MAX_CHARS = 2048
# getaddrinfo cannot be given a timeout; it runs here and is waited for at most this long.
_resolver = ThreadPoolExecutor(max_workers=8, thread_name_prefix="webhook-resolve")


class Policy(NamedTuple):
    allow_http: bool = False
    allow_private: bool = False


_policy = Policy()


def configure(*, allow_http: bool, allow_private: bool) -> None:
    global _policy
    _policy = Policy(allow_http, allow_private)


def policy() -> Policy:
    return _policy


class Refused(Exception):
    """The host is, or resolves to, an address the policy refuses; the message says which."""


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` writes literally ([::1], fe80::1%eth0, 10.0.0.5), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def refusal(address: str) -> str | None:
    """Why ``address`` (an IP address) is not a public one, or None if it is."""
    ip = _literal(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "a reserved address, not a public one"
    return None


def check_url(url: str, field: str = "url", *, resolve_timeout_s: float = 2.0) -> str:
    """``url`` if it may be registered; InvalidInput naming ``field`` and the rule otherwise.

    A literal address, or a name that resolves now, must pass the address rules; a name that does
    not resolve yet is accepted (its receiver may not be set up yet) and checked at delivery."""
    if len(url) > URL_MAX_CHARS:
        raise InvalidInput(f"{field} must be at most {URL_MAX_CHARS} characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInput(f"{field} must be an absolute URL, such as https://hooks.example.com/calls.") from None
    allowed = ("https", "http") if _policy.allow_http else ("https",)
    if parts.scheme not in allowed:
        extra = "" if _policy.allow_http else " (http only when the operator sets WEBHOOK_ALLOW_HTTP=true)"
        raise InvalidInput(f"{field} must be an https URL{extra}.")
    if not parts.hostname:
        raise InvalidInput(f"{field} must name a host, such as https://hooks.example.com/calls.")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(f"{field} must not hold a user name or password; put a token in the path or query.")
    if parts.fragment:
        raise InvalidInput(f"{field} must not have a #fragment; it is never sent.")
    if not _valid_host(parts.hostname):
        raise InvalidInput(f"{field} must name a valid host: labels of 1 to 63 characters, 253 in all.")
    if not _policy.allow_private:
        try:
            addresses(parts.hostname, port or (443 if parts.scheme == "https" else 80), resolve_timeout_s)
        except Refused as exc:
            raise InvalidInput(f"{field}: {exc} Set WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true to allow it.") from None
        except OSError:
            pass  # does not resolve now: checked again at each delivery
    return url


def _valid_host(host: str) -> bool:
    if _literal(host) is not None:
        return True
    try:
        encoded = host.rstrip(".").encode("idna")
    except UnicodeError:
        return False
    return 0 < len(encoded) <= 253 and all(0 < len(label) <= 63 for label in encoded.split(b"."))


def addresses(host: str, port: int, timeout_s: float) -> list[str]:
    """The addresses ``host`` resolves to, every one of which the policy allows; Refused naming
    the first that it does not; OSError if the name does not resolve within ``timeout_s``."""
    host = host.strip("[]")
    literal, name = _literal(host), None
    if literal is not None:
        found = [str(literal)]
    else:
        name = host.rstrip(".").lower()
        if name == "localhost" or name.endswith(".localhost"):
            found = ["127.0.0.1"]
        else:
            future = _resolver.submit(socket.getaddrinfo, name, port, type=socket.SOCK_STREAM)
            try:
                found = list(dict.fromkeys(info[4][0] for info in future.result(timeout=max(0.01, timeout_s))))
            except FutureTimeout:
                raise OSError(f"the host name did not resolve within {timeout_s:g} s") from None
            except socket.gaierror as exc:
                raise OSError(f"the host name does not resolve ({exc.strerror})") from None
            except (UnicodeError, ValueError):
                raise OSError("the host name is not valid") from None
    if not found:
        raise OSError("the host name resolves to no address")
    if not _policy.allow_private:
        for address in found:
            reason = refusal(address)
            if reason is not None:
                where = f"{host} resolves to {address}," if name else f"{address} is"
                raise Refused(f"{where} {reason}; webhooks go to public addresses only.")
    return found
