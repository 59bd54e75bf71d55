"""Who acts through a delegation, pure (gateway.core.delegation): its window at `now`, the
delegate matched as a person, the requester on neither side, the delegator's own check, and
one capacity per delegate and approval."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.delegation import MAX_WINDOW, Delegation, acting_for, check_window
from gateway.core.errors import ValidationError
from gateway.core.identity import Identities
from gateway.core.models import Outcome, Policy, Vote
from gateway.testing import make_approval

T0 = datetime(2031, 7, 1, 9, 0, tzinfo=UTC)
PEOPLE = Identities(people={"bob": ["web:bob", "operator:bobby"]})
ALICE_ONLY = {"web:alice"}


def d(delegator: str, delegate: str, *, start: timedelta = timedelta(0), hours: int = 8, n: int = 0) -> Delegation:
    at = T0 + timedelta(minutes=n)
    return Delegation(f"d{n}", delegator, delegate, T0 + start, T0 + timedelta(hours=hours), "operator:o", at)


def may(allowed: set[str]) -> Callable[[str], bool]:
    return lambda who: who in allowed


def test_the_window_is_from_included_until_excluded() -> None:
    a, one = make_approval(Policy(), T0), [d("web:alice", "web:bob", start=timedelta(hours=1), hours=2)]
    at = [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2) - timedelta(seconds=1), T0 + timedelta(hours=2)]
    found = [acting_for("web:bob", a, one, t, PEOPLE.party, may(ALICE_ONLY)) is not None for t in at]
    assert found == [False, True, True, False]
    revoked = [replace(one[0], revoked_at=T0)]
    assert acting_for("web:bob", a, revoked, T0 + timedelta(hours=1), PEOPLE.party, may(ALICE_ONLY)) is None


def test_the_delegate_is_matched_as_a_person_and_never_the_requester() -> None:
    one = [d("web:alice", "web:bob")]
    plain = make_approval(Policy(), T0)
    assert acting_for("operator:bobby", plain, one, T0, PEOPLE.party, may(ALICE_ONLY)) == one[0]
    assert acting_for("web:carol", plain, one, T0, PEOPLE.party, may(ALICE_ONLY)) is None
    for requester in ("operator:bobby", "web:alice"):
        theirs = make_approval(Policy(), T0, requested_by=requester)
        assert acting_for("web:bob", theirs, one, T0, PEOPLE.party, may(ALICE_ONLY)) is None, requester


def test_only_the_delegators_own_rights_and_one_capacity() -> None:
    both = [d("web:carol", "web:bob", n=0), d("web:alice", "web:bob", n=1)]
    a = make_approval(Policy(quorum=2), T0)
    assert acting_for("web:bob", a, both, T0, PEOPLE.party, may(set())) is None
    assert acting_for("web:bob", a, both, T0, PEOPLE.party, may(ALICE_ONLY)) == both[1]
    first = acting_for("web:bob", a, both, T0, PEOPLE.party, may({"web:alice", "web:carol"}))
    assert first == both[0]  # the older delegation
    voted = a.evolve(
        votes=(Vote("web:bob", Outcome.APPROVE, T0, on_behalf_of="web:alice", delegation="d1", counts_as="web:alice"),)
    )
    again = acting_for("web:bob", voted, both, T0, PEOPLE.party, may({"web:alice", "web:carol"}))
    assert again == both[1]  # for alice again (a duplicate), never a second vote for carol
    assert voted.votes[0].party == "web:alice"


@pytest.mark.parametrize(
    ("start", "end", "words"),
    [
        (T0, T0, "until: must be after from"),
        (T0 - timedelta(hours=2), T0 - timedelta(hours=1), "until: must be in the future"),
        (T0, T0 + MAX_WINDOW + timedelta(seconds=1), "until: a delegation lasts at most 90 days"),
    ],
)
def test_a_bad_window_names_until(start: datetime, end: datetime, words: str) -> None:
    with pytest.raises(ValidationError) as exc:
        check_window(start, end, T0)
    assert exc.value.message == words
    check_window(T0, T0 + MAX_WINDOW, T0)
