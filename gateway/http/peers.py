"""Who is at the other end of a request, behind the reverse proxies the operator trusts.

Behind a proxy (deploy/Caddyfile) every request comes from the proxy's address, so what is
counted per address (failed sign-ins) would be counted for everyone together: a stranger could
lock any name out. `[server] trusted_proxies` names the proxies (addresses or networks); for a
request from one of them, the client is the rightmost `X-Forwarded-For` address that is not a
trusted proxy itself. Each proxy appends the address it saw, so the entries left of that one
are the client's own words and are never believed. From any other peer the header is ignored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from functools import cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def networks(values: tuple[str, ...]) -> tuple[Network, ...]:
    """The trusted proxies as networks (`10.0.0.5`, `10.0.0.0/8`, `::1`), parsed once per setting;
    ValueError names a bad one."""
    return tuple(ipaddress.ip_network(value.strip(), strict=False) for value in values)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The client's address: `peer` itself unless it is a trusted proxy, else the rightmost
    address of `forwarded_for` that is not one (the proxies' own when every hop is trusted)."""
    here = _address(peer or "")
    if here is None or not any(here in net for net in trusted):
        return peer or ""
    hops = [a for a in (_address(part) for part in (forwarded_for or "").split(",")) if a is not None]
    for hop in reversed(hops):
        if not any(hop in net for net in trusted):
            return str(hop)
        here = hop
    return str(here)


__all__ = ["Network", "client_address", "networks"]
