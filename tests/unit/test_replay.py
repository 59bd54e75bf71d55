"""A replayed suspend is compared field by field with the stored approval (gateway.service.replay)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.core.models import Policy
from gateway.service.replay import first_difference
from gateway.testing import make_approval

NOW = datetime(2030, 1, 1, tzinfo=UTC)
POLICY = Policy(timeout=timedelta(hours=1))


def test_the_same_request_differs_in_nothing_even_after_an_escalation_added_channels() -> None:
    asked = make_approval(POLICY, NOW + timedelta(minutes=5))  # a retry, later: its own id and deadline
    stored = make_approval(POLICY, NOW, channels=("web", "telegram:1"), escalations=1, id="other")
    assert first_difference(stored, asked, channels=("web",), deadline=None) is None
    assert first_difference(stored, asked, channels=stored.channels, deadline=None) == "channels"


def test_a_deadline_is_compared_as_the_instant_it_names() -> None:
    deadline = NOW + timedelta(hours=3)
    created = NOW + timedelta(milliseconds=400)
    stored = make_approval(Policy(timeout=timedelta(seconds=10799)), created)  # the whole seconds of 10799.6
    later = NOW + timedelta(minutes=7, microseconds=5)
    asked = make_approval(Policy(timeout=deadline - later), later)
    assert first_difference(stored, asked, channels=stored.channels, deadline=deadline) is None
    assert first_difference(stored, asked, channels=stored.channels, deadline=deadline + timedelta(minutes=1)) == (
        "deadline"
    )
