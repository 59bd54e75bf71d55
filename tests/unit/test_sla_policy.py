"""Pure SLA arithmetic: parsing, deadlines, reminders, escalation and quorum (no clock, no DB)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gateway.core import policy as rules
from gateway.core.errors import ValidationError
from gateway.core.models import Approval, Outcome, Policy, Source, Status, Vote
from gateway.testing import FakeClock, make_approval

T0 = FakeClock().now()


def approval(policy: Policy, **over: Any) -> Approval:
    return make_approval(policy, T0, **over)


def parse(**fields: Any) -> Policy:
    return rules.parse_policy(fields, prefix="policy.")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"timeout": "soon"}, "policy.timeout"),
        ({"timeout": "0s"}, "policy.timeout"),
        ({"on_timeout": "maybe"}, "policy.on_timeout"),
        ({"on_timeout": "escalate"}, "policy.escalate_to"),
        ({"on_timeout": "escalate", "escalate_to": ["web"], "timeout": "never"}, "policy.timeout"),
        ({"escalate_to": "web"}, "policy.escalate_to"),
        ({"escalation_timeout": "never"}, "policy.escalation_timeout"),
        ({"after_escalation": "escalate"}, "policy.after_escalation"),
        ({"remind": "5m"}, "policy.remind"),
        ({"remind": ["5m", "x"]}, "policy.remind[1]"),
        ({"remind": ["30m"], "timeout": "30m"}, "policy.remind[0]"),
        ({"remind": ["1m"], "timeout": "never"}, "policy.remind"),
        ({"quorum": 0}, "policy.quorum"),
        ({"quorum": True}, "policy.quorum"),
        ({"quorum": "2"}, "policy.quorum"),
        ({"tiemout": "5m"}, "policy.tiemout"),
        ({"name": 3}, "policy.name"),
    ],
)
def test_invalid_fields_are_named(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse(**fields)
    assert err.value.field == field


def test_configured_policies_are_named_by_their_table() -> None:
    assert rules.parse_policy({"timeout": "1h"}, name="payments").name == "payments"
    with pytest.raises(ValidationError):
        rules.parse_policy({"name": "other"}, name="payments")


def test_defaults_and_never() -> None:
    p = parse()
    assert (p.timeout, p.on_timeout.value, p.quorum, p.remind) == (timedelta(minutes=30), "reject", 1, ())
    never = parse(timeout="never")
    a = approval(never)
    assert a.deadline is None and a.wake_at is None
    assert rules.due_action(a, T0 + timedelta(days=3650)) is None


def test_deadline_and_timeout_reason() -> None:
    a = approval(parse(timeout="1h", on_timeout="approve", name="payments"))
    assert a.deadline == T0 + timedelta(hours=1) == a.wake_at
    assert rules.due_action(a, T0 + timedelta(minutes=59, seconds=59)) is None
    t = rules.time_out(a, T0 + timedelta(hours=1))
    assert t.final and t.approval.status is Status.TIMED_OUT
    d = t.approval.decision
    assert d is not None and d.outcome is Outcome.APPROVE and d.decided_by == "policy" and d.source is Source.POLICY
    assert d.reason == "policy 'payments': no decision after 1 h"
    assert t.approval.wake_at is None and t.approval.version == a.version + 1


def test_reminders_count_back_from_the_deadline_and_fire_once() -> None:
    a = approval(parse(timeout="1h", remind=["10m", "30m"]))
    assert rules.reminder_times(a) == [T0 + timedelta(minutes=30), T0 + timedelta(minutes=50)]
    assert a.wake_at == T0 + timedelta(minutes=30)
    at = T0 + timedelta(minutes=30)
    assert rules.due_action(a, at - timedelta(seconds=1)) is None
    t = rules.remind(a, at)
    assert t.approval.reminders_sent == 1 and t.approval.wake_at == T0 + timedelta(minutes=50)
    assert rules.due_action(t.approval, at) is None  # at most once
    t2 = rules.remind(t.approval, T0 + timedelta(minutes=50))
    assert t2.approval.wake_at == a.deadline
    with pytest.raises(ValueError):
        rules.remind(t2.approval, T0 + timedelta(minutes=55))


def test_missed_reminders_collapse_into_one() -> None:
    a = approval(parse(timeout="1h", remind=["10m", "30m"]))
    t = rules.remind(a, T0 + timedelta(minutes=55))  # down through both
    assert t.approval.reminders_sent == 2 and t.data["skipped"] == 1
    assert rules.due_action(a, a.deadline + timedelta(seconds=1)) == "timeout"  # a late deadline beats reminders


def test_escalation_then_after_escalation() -> None:
    p = parse(
        timeout="1h",
        on_timeout="escalate",
        escalate_to=["slack:CBOSS"],
        escalation_timeout="30m",
        after_escalation="approve",
        remind=["10m", "45m"],
    )
    a = approval(p, reminders_sent=2)
    late = T0 + timedelta(hours=2)  # the gateway was down for an hour: the new wait starts now
    t = rules.time_out(a, late)
    e = t.approval
    assert t.event == "escalated" and not t.final and e.status is Status.WAITING
    assert e.channels == ("web", "slack:CBOSS") and e.escalations == 1
    assert e.deadline == late + timedelta(minutes=30)
    # 45m before a 30m wait is dropped; 10m before is kept
    assert rules.reminder_times(e) == [late + timedelta(minutes=20)] and e.reminders_sent == 0
    assert e.wake_at == late + timedelta(minutes=20)
    final = rules.time_out(e, e.deadline)
    assert final.approval.decision is not None and final.approval.decision.outcome is Outcome.APPROVE
    assert final.event == "timed_out" and "after escalation" in str(final.data["reason"])


def test_escalation_timeout_defaults_to_timeout() -> None:
    a = approval(parse(timeout="20m", on_timeout="escalate", escalate_to=["web"]))
    e = rules.time_out(a, a.deadline).approval
    assert e.deadline == T0 + timedelta(minutes=40)


def vote(who: str, outcome: Outcome = Outcome.APPROVE) -> Vote:
    return Vote(who, outcome, T0)


def test_quorum_two_of_three_counts_distinct_people() -> None:
    a = approval(parse(quorum=2), approvers=("web:a", "web:b", "web:c"))
    assert a.quorum_text == "0 of 2 approvals"
    t1 = rules.apply_vote(a, vote("web:a"))
    assert (t1.event, t1.final, t1.approval.quorum_text) == ("vote", False, "1 of 2 approvals")
    dup = rules.apply_vote(t1.approval, vote("web:a"))
    assert dup.event == "duplicate_vote" and dup.approval is t1.approval
    t2 = rules.apply_vote(t1.approval, vote("web:b"))
    assert t2.final and t2.approval.status is Status.APPROVED and t2.approval.quorum_text == "2 of 2 approvals"
    with pytest.raises(Exception, match="already approved"):
        rules.apply_vote(t2.approval, vote("web:c"))


def test_any_reject_vetoes() -> None:
    a = approval(parse(quorum=2))
    t1 = rules.apply_vote(a, vote("web:a"))
    t2 = rules.apply_vote(t1.approval, vote("web:b", Outcome.REJECT))
    assert t2.final and t2.approval.status is Status.REJECTED
    assert t2.approval.decision is not None and t2.approval.decision.decided_by == "web:b"


def test_timeout_after_partial_quorum_is_by_policy() -> None:
    a = approval(parse(quorum=2, timeout="5m"))
    t1 = rules.apply_vote(a, vote("web:a"))
    out = rules.apply_due(t1.approval, T0 + timedelta(minutes=5))
    assert out is not None and out.approval.status is Status.TIMED_OUT


def test_reminders_view() -> None:
    a = approval(parse(timeout="1h", remind=["10m"]))
    view = rules.reminders_view(a)
    assert view == [{"at": "2030-01-01T12:50:00Z", "before_deadline": "10m", "done": False}]
    sent = rules.remind(a, T0 + timedelta(minutes=50)).approval
    assert rules.reminders_view(sent)[0]["done"] is True


def test_escalation_posts_new_cards_and_syncs_the_old_ones() -> None:
    from gateway.core.models import OutboxKind
    from gateway.service.approvals import _due_outbox

    a = approval(parse(timeout="1m", on_timeout="escalate", escalate_to=["slack:CBOSS", "web"]))
    t = rules.time_out(a, T0 + timedelta(minutes=1))
    rows = [(o.channel, o.kind) for o in _due_outbox(a, t)]
    assert rows == [("web", OutboxKind.SYNC), ("slack:CBOSS", OutboxKind.POST)]
    r = rules.remind(
        approval(parse(timeout="1h", remind=["5m"]), channels=("web", "slack:C1")), a.created_at + timedelta(minutes=55)
    )
    assert [(o.channel, o.kind, o.data["number"]) for o in _due_outbox(a, r)] == [
        ("web", OutboxKind.REMIND, 1),
        ("slack:C1", OutboxKind.REMIND, 1),
    ]
