"""A Web Push endpoint is checked when it is subscribed: an https URL of a public host, never
an address inside the gateway's network. A host name, though, is only as good as its DNS: a
name the approver controls (or `169.254.169.254.nip.io`) can resolve to the metadata service or
a private address, at subscribe time or at any later push. The push session's resolver keeps
public addresses only: such a push is never connected, and not retried either."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from gateway.core.channels import OutgoingCard
from gateway.core.models import Approval, Policy
from gateway.core.tokens import TokenSigner
from gateway.core.webpush import PushSubscription
from gateway.delivery.webpush import NotPublic, PublicOnly, PushingWebChannel
from gateway.settings import Settings
from gateway.settings.webpush import generate_keys
from gateway.testing import make_approval

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
P256DH, _ = generate_keys()  # a P-256 point, as a browser's key is (the payload is encrypted first)
AUTH = "QUJDREVGR0hJSktMTU5PUA"  # 16 bytes, base64url


class Records(AbstractResolver):
    """DNS as the attacker wrote it: every name is `addresses`."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0) for a in self.addresses
        ]

    async def close(self) -> None:
        return None


@pytest.mark.parametrize(
    ("host", "addresses", "kept"),
    [
        ("push.example", ("169.254.169.254",), ()),
        ("push.example", ("10.0.0.7", "192.168.1.1", "127.0.0.1", "::1", "fd00::1"), ()),
        ("push.example", ("::ffff:169.254.169.254",), ()),
        ("push.example", ("10.0.0.7", "93.184.216.34"), ("93.184.216.34",)),  # a rebinding pair: the public one
        ("push.example", ("2606:2800:220:1::1",), ("2606:2800:220:1::1",)),
        ("localhost", ("127.0.0.1", "::1"), ("127.0.0.1", "::1")),  # a local push service, as allowed
    ],
)
async def test_the_push_resolver_keeps_public_addresses_only(
    host: str, addresses: tuple[str, ...], kept: tuple[str, ...]
) -> None:
    resolver = PublicOnly(Records(*addresses))
    if not kept:
        with pytest.raises(NotPublic):
            await resolver.resolve(host, 443)
    else:
        assert tuple(r["host"] for r in await resolver.resolve(host, 443)) == kept


class _One:
    """The subscriptions use case, reduced to one subscription for any approval."""

    def __init__(self, sub: PushSubscription) -> None:
        self.sub = sub

    async def for_approval(self, approval: Approval) -> list[PushSubscription]:
        return [self.sub]


async def test_a_push_whose_endpoint_name_leads_inside_is_never_connected_nor_retried(
    settings_factory: Callable[..., Settings],
) -> None:
    connected: list[Any] = []

    async def inside(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.append(writer.get_extra_info("peername"))  # the internal service the name leads to
        writer.close()

    server = await asyncio.start_server(inside, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    public, private = generate_keys()
    settings = settings_factory(
        webpush={"public_key": public, "private_key": private, "subject": "mailto:ops@acme.com"}
    )
    sub = PushSubscription(f"https://push.attacker.example:{port}/x", "alice", P256DH, AUTH, NOW)
    channel = PushingWebChannel(
        settings.webpush,
        "http://gw",
        TokenSigner(["k" * 32]),
        _One(sub),
        resolver=Records("127.0.0.1"),  # type: ignore[arg-type]
    )
    approval = make_approval(Policy(timeout=timedelta(hours=1)), NOW)
    try:
        await channel.post_card(OutgoingCard("web", "", approval, NOW), [])  # no DeliveryError: not retried
    finally:
        await channel.close()
        server.close()
        await server.wait_closed()
    assert connected == []
