"""Who may decide where, and where cards may go: gateway.service.routing, from real settings."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from gateway.config import Settings
from gateway.core.errors import DestinationNotAllowed, ValidationError
from gateway.core.models import OnTimeout, Policy
from gateway.core.principals import Principal
from gateway.service import routing
from gateway.settings.channels import destination_entry

TELEGRAM = {"bot_token": "123456:TEST-token_abc", "chats": [-1001, "billing:-1002", "@news"]}


@pytest.fixture
def make(settings_factory: Callable[..., Settings]) -> Callable[..., Settings]:
    def build(**sections: Any) -> Settings:
        return settings_factory(**sections)

    return build


def test_a_destination_entry_is_open_to_all_or_to_one_agent() -> None:
    assert destination_entry(-1001) == (None, "-1001")
    assert destination_entry("Billing:-1002") == ("billing", "-1002")
    assert destination_entry("alice@example.org") == (None, "alice@example.org")
    assert destination_entry("billing:cfo@example.org") == ("billing", "cfo@example.org")


def test_only_opened_destinations_take_an_agents_cards(make: Callable[..., Settings]) -> None:
    settings = make(telegram=TELEGRAM, policies={"oncall": {"on_timeout": "escalate", "escalate_to": ["telegram:-9"]}})
    opened = routing.destinations(settings)
    billing, mail = Principal("agent", "Billing"), Principal("agent", "mail")
    plain = Policy()
    routing.check_destinations(["web", "telegram:-1001", "telegram:@news"], plain, mail, opened)
    routing.check_destinations(["telegram:-1002"], plain, billing, opened)
    with pytest.raises(DestinationNotAllowed) as refused:
        routing.check_destinations(["telegram:-1002"], plain, mail, opened)
    assert refused.value.details == {"channel": "telegram:-1002"} and "telegram.chats" in refused.value.message
    routing.check_destinations(["telegram:-5"], plain, Principal("operator", "alice"), opened)
    routing.check_destinations(["telegram:-5"], plain, None, opened)  # the gateway's own process
    # a configured policy's escalate_to is the operator's; an inline one is checked
    routing.check_destinations(["web"], settings.policies["oncall"], mail, opened)
    inline = Policy(timeout=timedelta(hours=1), on_timeout=OnTimeout.ESCALATE, escalate_to=("telegram:-9",))
    with pytest.raises(DestinationNotAllowed, match=r"^policy\.escalate_to:"):
        routing.check_destinations(["web"], inline, mail, opened)


def test_allowlists_fall_back_to_people_and_warn_where_nobody_decides(make: Callable[..., Settings]) -> None:
    settings = make(telegram=TELEGRAM, web={"approvers": ["alice"]}, people={"bob": {"telegram": 222}})
    lists = routing.allowlists(settings)
    assert lists["telegram"] == {"telegram:222"} and lists["web"] == {"web:alice"}
    assert routing.undecidable(settings) == []
    assert routing.undecidable(make(telegram=TELEGRAM)) == ["telegram.approvers"]


def test_named_approvers_must_be_able_to_reach_the_quorum(make: Callable[..., Settings]) -> None:
    settings = make(telegram=TELEGRAM | {"approvers": [111]}, web={"approvers": ["alice", "bob"]})
    lists, ids, ops = routing.allowlists(settings), settings.identities, frozenset({"operator:alice"})

    def check(channels: list[str], approvers: tuple[str, ...], requester: str | None = None, quorum: int = 1) -> None:
        routing.check_reachable(channels, approvers, requester, quorum, lists, ids, ops)

    check(["telegram:-1001"], ("telegram:111",))
    check(["web", "telegram:-1001"], ("web:alice",))
    check(["web"], ("operator:alice",))  # a configured operator decides through the API
    check(["web"], ())  # names nobody: the allowlists decide
    check(["web"], ("web:alice", "web:bob"), quorum=2)
    check(["web", "telegram:-1001"], ("web:alice", "telegram:111"), quorum=2)
    check(["web"], ("web:alice", "operator:alice"), quorum=2)
    refused_cases = [
        (["web", "telegram:-1001"], ("telegram:424242",), None, 1),
        (["web", "telegram:-1001"], ("web:alice",), "web:alice", 1),
        (["web"], ("operator:nobody",), None, 1),  # no such operator
        (["web"], ("web:alice", "operator:nobody"), None, 1),
        (["web"], ("web:alice", "web:mallory"), None, 2),  # mallory may not decide: 1 of 2
        (["web"], ("web:alice", "web:bob"), "web:bob", 2),  # the requester never counts
    ]
    for channels, approvers, requester, quorum in refused_cases:
        with pytest.raises(ValidationError) as refused:
            check(channels, approvers, requester, quorum)
        assert refused.value.field == "approvers"
