"""Where outbound webhooks may go: the operator's policy and the address rules.

A subscription's URL is https (http only with ``WEBHOOK_ALLOW_HTTP``), and its host must not
lead to this machine or its private network: loopback, private, link-local (where clouds serve
instance metadata and credentials), carrier-grade NAT, multicast, reserved or unspecified
addresses are refused unless ``WEBHOOK_ALLOW_PRIVATE_ADDRESSES`` allows them. The URL is checked
when it is registered and its host resolved again at every delivery, and the delivery connects
to the address it checked (api.webhook_delivery): a name that resolved to a public address at
registration and to 10.0.0.5 later is refused then.

An IPv6 address that carries an IPv4 one is judged by the IPv4 it carries, since that is where
its packets end up: IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::a.b.c.d``, 6to4
``2002:AABB:CCDD::/48`` and Teredo ``2001:0::/32`` (both its server's and its client's IPv4 must be
public). Two forms are refused whatever they carry: the deprecated IPv4-compatible ``::a.b.c.d``
(no receiver has one; ``::`` and ``::1`` are judged as themselves), and NAT64's local-use prefix
``64:ff9b:1::/48`` (RFC 8215), which leads to a translator of the operator's own network and
places the IPv4 where that network's prefix length says.
"""
from __future__ import annotations

import ipaddress
import socket
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import NamedTuple
from urllib.parse import quote, urlsplit, urlunsplit

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


_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")


def refusal(address: str) -> str | None:
    """Why ``address`` (an IP address) is not a public one, or None if it is."""
    ip = _literal(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL_USE:
            return "a local-use NAT64 address (64:ff9b:1::/48), which leads into a private network"
        if ip in _IPV4_COMPATIBLE and int(ip) > 1:
            return "a deprecated IPv4-compatible address (::a.b.c.d), not a public one"
        carried = _carried_ipv4(ip)
        if carried:
            for inner in carried:
                if (reason := _refusal(inner)) is not None:
                    return f"{reason} ({inner}, carried in the IPv6 address)"
            return None
    return _refusal(ip)


def _carried_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses whose hosts ``ip``'s packets reach, if it is a form that carries one."""
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip in _NAT64:
        return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo  # its server, and its client (the last 32 bits inverted)
    return ()


def _refusal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
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
    try:
        return _ascii(parts, port)
    except UnicodeError:  # a lone surrogate, which no encoding writes
        raise InvalidInput(f"{field} must be text that UTF-8 can encode.") from None


# What a URL may keep unescaped in its path and query (RFC 3986's reserved and unreserved
# characters, and % so that escapes already made stay as they are).
_URL_SAFE = "/:@!$&'()*+,;=?%~-._"


def _ascii(parts, port: int | None) -> str:
    """The URL as it goes on the wire: an international host in its IDNA form and any other
    character outside ASCII percent-encoded (UTF-8), as a browser sends it, since a request line
    carries ASCII only. Stored so, the URL means the same at every delivery."""
    host = parts.hostname
    if _literal(host) is None:
        host = host.rstrip(".").encode("idna").decode("ascii").lower() + ("." if host.endswith(".") else "")
    elif ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, quote(parts.path, safe=_URL_SAFE),
                       quote(parts.query, safe=_URL_SAFE), ""))


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
