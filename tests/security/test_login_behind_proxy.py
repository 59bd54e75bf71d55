"""Behind the reverse proxy the deployment ships (deploy/Caddyfile), every sign-in came from the
proxy's address, and failed sign-ins are counted per (address, name): five wrong passwords from
anyone on the internet locked that name out for everyone, for 15 minutes. With the proxy in
`[server] trusted_proxies`, the client is the address the proxy appends to X-Forwarded-For;
entries the client wrote itself, and the header from any other peer, are never believed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gateway.core.errors import ConfigError
from gateway.http.app import create_app
from gateway.http.peers import client_address, networks
from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.testing import FakeClock
from tests.web.conftest import PASSWORD, WEB, csrf_of

PROXY = networks(("127.0.0.1", "10.0.0.0/8"))


async def _sign_in(client: Any, name: str, password: str, forwarded: str) -> int:
    headers = {"X-Forwarded-For": forwarded}
    page = await client.get("/login", headers=headers)
    form = {"csrf": csrf_of(await page.text()), "name": name, "password": password}
    resp = await client.post("/login", data=form, headers=headers, allow_redirects=False)
    return int(resp.status)


async def test_a_stranger_behind_the_proxy_does_not_lock_the_name_out_for_everyone(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Settings], clock: FakeClock
) -> None:
    settings = settings_factory(web=WEB, server={"trusted_proxies": ["127.0.0.1"]})
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    try:
        web = await aiohttp_client(create_app(settings, runtime=rt, background=False))
        for _ in range(5):  # the stranger, at 203.0.113.9, guesses (and forges an address left of it)
            assert await _sign_in(web, "alice", "guess", "198.51.100.7, 203.0.113.9") == 401
        assert await _sign_in(web, "alice", PASSWORD, "203.0.113.9") == 429  # the guesser is stopped
        assert await _sign_in(web, "alice", PASSWORD, "198.51.100.7") == 303  # before: 429 for alice too
    finally:
        await rt.stop()


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("127.0.0.1", "198.51.100.7", "198.51.100.7"),
        ("127.0.0.1", "1.2.3.4, 198.51.100.7", "198.51.100.7"),  # what the client wrote is not believed
        ("127.0.0.1", "198.51.100.7, 10.1.2.3", "198.51.100.7"),  # through two trusted proxies
        ("127.0.0.1", "[2001:db8::1]:443", "2001:db8::1"),
        ("127.0.0.1", "", "127.0.0.1"),
        ("127.0.0.1", "not-an-address", "127.0.0.1"),
        ("203.0.113.9", "198.51.100.7", "203.0.113.9"),  # not a trusted proxy: its header is ignored
        ("::ffff:127.0.0.1", "198.51.100.7", "198.51.100.7"),
    ],
)
def test_the_client_is_the_rightmost_untrusted_forwarded_address(peer: str, forwarded: str, client: str) -> None:
    assert client_address(peer, forwarded, PROXY) == client
    assert client_address(peer, forwarded, ()) == peer  # nothing trusted: the peer, always


def test_a_trusted_proxy_that_is_no_address_stops_the_start(settings_factory: Callable[..., Settings]) -> None:
    with pytest.raises(ConfigError) as err:
        settings_factory(server={"trusted_proxies": ["10.0.0.0/8", "caddy"]})
    assert err.value.key == "server.trusted_proxies[1]"
