"""A web user whose configured name has capitals is one identity, `web:<lower case>`, everywhere.

`[web] approvers = ["Alice"]` signs in as `Alice`, and the use cases compare canonical identities
(`web:alice`). The inbox used to hand them `web:Alice`: Alice could not delegate her own
approvals ("web:Alice may delegate only their own approvals, not web:alice's"), revoke her own
delegation, or see them on her Delegations page, and her dashboard actions were recorded under a
spelling no other record uses.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import FakeClock
from tests.web.conftest import HASH, csrf_of, sign_in


async def test_a_capitalised_web_name_delegates_and_revokes_its_own(
    aiohttp_client: Callable[..., Any], settings_factory: Callable[..., Any], clock: FakeClock
) -> None:
    settings = settings_factory(web={"approvers": ["Alice", "bob"], "passwords": {"Alice": HASH}})
    rt = Runtime(settings, clock=clock, owner="test")
    client = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    assert (await sign_in(client, "Alice")).status == 303
    page = await (await client.get("/delegations")).text()
    until = (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    made = await client.post(
        "/delegations", data={"csrf": csrf_of(page), "delegate": "bob", "until": until}, allow_redirects=False
    )
    assert made.status == 303, await made.text()
    (given,) = await rt.store.list_delegations(clock.now(), live=False, limit=10)
    assert (given.delegator, given.created_by) == ("web:alice", "web:alice")
    page = await (await client.get("/delegations")).text()
    assert given.id in page  # listed among hers
    gone = await client.post(f"/delegations/{given.id}/revoke", data={"csrf": csrf_of(page)}, allow_redirects=False)
    assert gone.status == 303
    revoked = await rt.store.get_delegation(given.id)
    assert revoked is not None and revoked.revoked_by == "web:alice"
