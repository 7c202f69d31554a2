"""The SSRF guard of ``web_fetch``: which URLs and addresses a fetch may reach."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

import anyio

__all__ = ["Blocked", "Resolver", "check_address", "resolve_checked", "system_resolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], Awaitable[list[str]]]

# Cloud metadata endpoints: refused even when private addresses are allowed.
METADATA: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, ...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS VPC DNS
        "fd00:ec2::254",  # AWS IPv6 metadata
        "fd00:ec2::253",
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_V4_COMPAT = ipaddress.ip_network("::/96")


class Blocked(Exception):
    """The fetch may not go there; the message says why (the model sees it)."""


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[IPAddress]:
    """IPv4 addresses an IPv6 address leads to (mapped, 6to4, NAT64, IPv4-compatible)."""
    out: list[IPAddress] = []
    if ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.append(ip.teredo[1])
    if ip in _NAT64 or ip in _NAT64_LOCAL or (ip in _V4_COMPAT and int(ip) > 1):
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def check_address(address: str, *, allow_private: bool = False) -> None:
    """Raise ``Blocked`` unless ``address`` (an IP literal) is a public unicast address.

    ``allow_private`` lets loopback, private and link-local addresses through, never cloud metadata,
    multicast or the unspecified address.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        raise Blocked(f"{address!r} is not an IP address") from None
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates.extend(_embedded_v4(ip))
    for c in candidates:
        what = _forbidden(c, allow_private)
        if what is not None:
            shown = str(ip) if c == ip else f"{ip} (that is {c})"
            raise Blocked(f"{shown} is {what}")


def _forbidden(ip: IPAddress, allow_private: bool) -> str | None:
    if ip in METADATA:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if allow_private:
        return None
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "not a public address"
    return None


async def system_resolver(host: str) -> list[str]:
    """The addresses of ``host`` from the system resolver."""
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    out: list[str] = []
    for info in infos:
        addr = str(info[4][0])
        if addr not in out:
            out.append(addr)
    return out


async def resolve_checked(host: str, resolver: Resolver, *, allow_private: bool) -> str:
    """Resolve ``host`` and check EVERY answer; the address to connect to (the first answer)."""
    literal = host.strip("[]")
    try:
        ipaddress.ip_address(literal.split("%", 1)[0])
    except ValueError:
        pass
    else:
        check_address(literal, allow_private=allow_private)
        return literal
    try:
        answers: Sequence[str] = await resolver(host)
    except anyio.get_cancelled_exc_class():
        raise
    except (OSError, ValueError) as e:
        raise Blocked(f"cannot resolve {host!r}: {e}") from None
    if not answers:
        raise Blocked(f"{host!r} has no address")
    for a in answers:
        try:
            check_address(a, allow_private=allow_private)
        except Blocked as e:
            # One bad answer refuses the name: a rebinding name may offer a public and a private one.
            raise Blocked(f"{host} resolves to {e}") from None
    return answers[0]
