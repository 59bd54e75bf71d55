"""policy.first_wake (what Service.suspend stores before the approval exists) == next_wake of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.core import policy as rules
from gateway.core.models import Policy
from gateway.testing import make_approval

_span = st.integers(min_value=0, max_value=10**7).map(lambda s: timedelta(seconds=s))


@settings(max_examples=300, deadline=None)
@given(
    timeout=st.none() | _span.filter(bool),
    remind=st.lists(_span, max_size=4).map(tuple),
    escalate=st.booleans(),
    at=st.integers(min_value=0, max_value=2 * 10**9),
)
def test_first_wake_is_the_new_approvals_next_wake(
    timeout: timedelta | None, remind: tuple[timedelta, ...], escalate: bool, at: int
) -> None:
    policy = Policy(timeout=timeout, remind=remind, escalate_to=("web",) if escalate else ())
    now = datetime.fromtimestamp(at, UTC)
    approval = make_approval(policy, now)
    assert rules.first_wake(policy, now, rules.deadline_for(policy, now)) == rules.next_wake(approval)
    assert approval.wake_at == rules.next_wake(approval)
