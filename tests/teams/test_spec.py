"""The `[teams]` section: conversation ids (which hold ':'), tenants required, Entra ids."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adapters.teams.spec import SPEC, conversation_target
from gateway.config import Settings
from gateway.core.errors import ConfigError
from gateway.service import routing
from tests.fakes.teams_api import APP_ID, APP_PASSWORD, TENANT

CHANNEL = "19:abc123@thread.tacv2"
OTHER = "19:def456@thread.v2"


def test_conversation_ids_keep_their_colon_and_drop_a_thread_suffix() -> None:
    assert conversation_target(CHANNEL) == CHANNEL
    assert conversation_target(f"{CHANNEL};messageid=1700000000000") == CHANNEL
    assert conversation_target("a:1XyZ-personal_chat") == "a:1XyZ-personal_chat"
    for bad in ("C0123ABCD", "19:", "billing:19:abc@thread.tacv2", "19:a b", "19:<script>"):
        with pytest.raises(ValueError):
            conversation_target(bad)


def test_a_conversation_is_open_to_every_agent_or_to_the_one_named(
    settings_factory: Callable[..., Settings],
) -> None:
    """A Teams id holds ':'; written alone it is open to every agent, `NAME:<id>` to NAME only."""
    section = {"app_id": APP_ID, "app_password": APP_PASSWORD, "tenant_ids": [TENANT]}
    settings = settings_factory(teams=section | {"conversations": [CHANNEL, f"billing:{OTHER}"]})
    opened = routing.destinations(settings).addresses
    assert opened == {f"teams:{CHANNEL}": frozenset({None}), f"teams:{OTHER}": frozenset({"billing"})}


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"tenant_ids": []}, "teams.tenant_ids"),
        ({"tenant_ids": ["contoso.onmicrosoft.com"]}, "teams.tenant_ids[0]"),
        ({"app_password": ""}, "teams.app_password"),
        ({"service_url": "ftp://x"}, "teams.service_url"),
    ],
)
def test_the_section_is_checked(over: dict[str, object], key: str) -> None:
    values = {"app_id": APP_ID, "app_password": APP_PASSWORD, "tenant_ids": (TENANT,)} | over
    with pytest.raises(ConfigError) as caught:
        SPEC.check(SPEC.settings(**values))
    assert caught.value.details.get("field", caught.value.message).startswith(key) or key in str(caught.value)


def test_approvers_are_entra_object_ids_in_lower_case() -> None:
    oid = "8F0E1C2D-0000-4000-8000-00000000ABCD"
    assert SPEC.identity.canonical(oid) == oid.lower()
    assert SPEC.identity.canonical("29:1alice") is None  # a Teams user id is not an approver id
    assert SPEC.identity.canonical("alice@contoso.com") is None
