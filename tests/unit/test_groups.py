"""Groups, pure: who is in one (configured members, a person's every identity, the groups a
sign-in claimed), and how the decision rule expands them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.core import policy as rules
from gateway.core.errors import NotAnApprover, ValidationError
from gateway.core.identity import Identities
from gateway.core.models import Approval, Policy
from gateway.testing import make_approval

IDS = Identities(
    people={"dave": ["web:dave", "web:dave2"]},
    groups={"finance": ["web:alice", "dave"], "empty": [], "claimed": []},
    claimable=["claimed", "unknown"],
)


def test_membership_is_by_party_or_by_claim() -> None:
    assert IDS.in_group("group:finance", "web:alice")
    assert IDS.in_group("group:finance", "web:dave2")  # dave's other identity
    assert not IDS.in_group("group:finance", "web:bob")
    assert not IDS.in_group("group:empty", "web:alice")
    assert not IDS.in_group("group:claimed", "web:bob")
    assert IDS.in_group("group:claimed", "web:bob", claimed={"claimed"})
    assert not IDS.in_group("group:unknown", "web:bob", claimed={"unknown"})  # only configured groups
    assert not IDS.in_group("web:alice", "web:alice")
    assert IDS.claimable == {"claimed"}


def test_a_group_is_named_never_an_actor() -> None:
    assert IDS.approver("group:finance", "approvers[0]") == "group:finance"
    with pytest.raises(ValidationError, match=r"approvers\[0\].*not a configured group"):
        IDS.approver("group:nope", "approvers[0]")
    with pytest.raises(ValidationError):
        IDS.canonical("group:finance", "by")


def _approval(approvers: tuple[str, ...]) -> Approval:
    return make_approval(Policy(), datetime(2026, 1, 1, tzinfo=UTC), approvers=approvers)


def test_the_decision_rule_expands_groups_with_the_actors_claims() -> None:
    allow = frozenset({"web:alice", "web:bob", "web:dave", "group:claimed"})
    approval = _approval(("group:finance",))
    rules.check_may_decide("web:alice", approval, allow, IDS.party, IDS.in_group)
    with pytest.raises(NotAnApprover):
        rules.check_may_decide("web:bob", approval, allow, IDS.party, IDS.in_group)
    claimed = _approval(("group:claimed",))

    def carols(group: str, identity: str) -> bool:
        return IDS.in_group(group, identity, {"claimed"} if identity == "web:carol" else ())

    # carol is on no list by name: the web allowlist's group admits her, and so does the approval's
    rules.check_may_decide("web:carol", claimed, allow, IDS.party, carols)
    with pytest.raises(NotAnApprover):
        rules.check_may_decide("web:carol", claimed, allow, IDS.party, IDS.in_group)
    assert rules.deciders(allow, ("group:empty",), None, IDS.party, IDS.in_group) == frozenset()
    assert rules.deciders(allow, ("group:finance",), "web:dave2", IDS.party, IDS.in_group) == {"web:alice"}
