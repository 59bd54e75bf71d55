from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.core import policy as rules
from gateway.core.errors import AlreadyDecided, NotAnApprover, RequesterCannotDecide, ValidationError
from gateway.core.models import Approval, OnTimeout, Outcome, Policy, Source, Status, Vote

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)


def approval(policy: Policy | None = None, **kw: object) -> Approval:
    p = policy or Policy()
    a = Approval(
        id="a1",
        idempotency_key="k",
        run_id="r",
        step="s",
        title="t",
        summary="",
        args={},
        state=None,
        channels=("web",),
        approvers=(),
        policy=p,
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=NOW,
        deadline=rules.deadline_for(p, NOW),
        args_hash="h",
    )
    a = a.evolve(**kw)
    return a.evolve(wake_at=rules.next_wake(a))


def vote(who: str, outcome: Outcome = Outcome.APPROVE, at: datetime = NOW) -> Vote:
    return Vote(who, outcome, at)


def test_first_approve_decides_with_quorum_one() -> None:
    t = rules.apply_vote(approval(), vote("web:ann"))
    assert t.final and t.approval.status is Status.APPROVED
    assert t.approval.decision is not None and t.approval.decision.decided_by == "web:ann"
    assert t.approval.wake_at is None and t.approval.version == 2


def test_decided_approval_refuses_more_votes() -> None:
    done = rules.apply_vote(approval(), vote("web:ann")).approval
    with pytest.raises(AlreadyDecided, match="already approved by web:ann"):
        rules.apply_vote(done, vote("web:bob", Outcome.REJECT))


def test_quorum_counts_distinct_people_and_reject_vetoes() -> None:
    a = approval(Policy(quorum=2))
    t1 = rules.apply_vote(a, vote("web:ann"))
    assert not t1.final and t1.event == "vote" and t1.approval.approvals_count == 1
    dup = rules.apply_vote(t1.approval, vote("web:ann"))
    assert dup.event == "duplicate_vote" and dup.approval is t1.approval
    t2 = rules.apply_vote(t1.approval, vote("web:bob"))
    assert t2.final and t2.approval.status is Status.APPROVED
    veto = rules.apply_vote(t1.approval, vote("web:cy", Outcome.REJECT))
    assert veto.final and veto.approval.status is Status.REJECTED


def test_who_may_decide() -> None:
    a = approval(requested_by="web:agent")
    with pytest.raises(RequesterCannotDecide):
        rules.check_may_decide("web:agent", a, ["web:agent"])
    with pytest.raises(NotAnApprover):
        rules.check_may_decide("telegram:2", a, ["telegram:1"])
    rules.check_may_decide("telegram:1", a, ["telegram:1"])
    named = approval(approvers=("slack:U1",))
    with pytest.raises(NotAnApprover):
        rules.check_may_decide("slack:U2", named, ["slack:U2"])  # the approval's own list wins
    rules.check_may_decide("slack:U1", named, ["slack:U1", "slack:U2"])
    with pytest.raises(NotAnApprover):  # named by the agent, but the channel lists nobody: never widens
        rules.check_may_decide("slack:U1", named, [])
    assert rules.deciders(["slack:U1", "slack:U2"], named.approvers, None) == {"slack:U1"}
    assert rules.deciders([], named.approvers, None) == frozenset()
    assert rules.deciders(["web:a", "web:b"], (), "web:a") == {"web:b"}


def test_timeout_is_a_policy_decision_not_a_human_one() -> None:
    a = approval(Policy(timeout=timedelta(minutes=30), on_timeout=OnTimeout.APPROVE))
    assert rules.due_action(a, NOW + timedelta(minutes=29)) is None
    later = NOW + timedelta(minutes=30)
    assert rules.due_action(a, later) == "timeout"
    t = rules.time_out(a, later)
    assert t.approval.status is Status.TIMED_OUT
    d = t.approval.decision
    assert d is not None and d.outcome is Outcome.APPROVE and d.decided_by == "policy" and d.source is Source.POLICY
    assert d.reason is not None and "default" in d.reason and "30 min" in d.reason


def test_escalation_then_after_escalation() -> None:
    p = Policy(
        timeout=timedelta(minutes=10),
        on_timeout=OnTimeout.ESCALATE,
        escalate_to=("slack:C2",),
        escalation_timeout=timedelta(minutes=5),
        after_escalation=Outcome.APPROVE,
    )
    a = approval(p)
    t = rules.time_out(a, NOW + timedelta(minutes=10))
    assert t.event == "escalated" and not t.final
    assert t.approval.deadline == NOW + timedelta(minutes=15)
    assert "slack:C2" in t.approval.channels
    final = rules.time_out(t.approval, NOW + timedelta(minutes=15))
    assert final.approval.status is Status.TIMED_OUT
    assert final.approval.decision is not None and final.approval.decision.outcome is Outcome.APPROVE


def test_reminders_before_deadline() -> None:
    p = Policy(timeout=timedelta(hours=1), remind=(timedelta(minutes=30), timedelta(minutes=10)))
    a = approval(p)
    assert a.wake_at == NOW + timedelta(minutes=30)
    assert rules.due_action(a, NOW + timedelta(minutes=30)) == "remind"
    r = rules.remind(a).approval
    assert r.reminders_sent == 1 and r.wake_at == NOW + timedelta(minutes=50)
    r2 = rules.remind(r).approval
    assert r2.wake_at == NOW + timedelta(hours=1)


def test_never_expiring_policy_has_no_wake() -> None:
    a = approval(Policy(timeout=None))
    assert a.deadline is None and a.wake_at is None
    assert rules.due_action(a, NOW + timedelta(days=365)) is None


def test_cancel() -> None:
    t = rules.cancel(approval(), "api", "not needed", NOW)
    assert t.approval.status is Status.CANCELLED and t.final
    with pytest.raises(AlreadyDecided):
        rules.cancel(t.approval, "api", None, NOW)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timeout": "soon"}, "timeout"),
        ({"on_timeout": "maybe"}, "on_timeout"),
        ({"on_timeout": "escalate"}, "escalate_to"),
        ({"quorum": 0}, "quorum"),
        ({"quorum": "2"}, "quorum"),
        ({"remind": ["5m"], "timeout": "never"}, "remind"),
        ({"remind": "5m"}, "remind"),
        ({"colour": "red"}, "colour"),
        ({"after_escalation": "escalate"}, "after_escalation"),
    ],
)
def test_parse_policy_names_the_bad_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        rules.parse_policy(body, prefix="policy.")
    assert err.value.field == f"policy.{field}"


def test_parse_policy_defaults_and_never() -> None:
    p = rules.parse_policy({"timeout": "never", "quorum": 2})
    assert p.timeout is None and p.quorum == 2 and p.on_timeout is OnTimeout.REJECT


def test_backoff_stays_capped_for_any_attempt_number() -> None:
    # Rows are retried forever (never dropped): after ~1025 attempts 2**n no longer fits a float,
    # and the OverflowError jammed the outbox row in a crash loop.
    from gateway.core.retry import backoff

    assert backoff(1, rand=1.0) == 1.0 and backoff(3, rand=0.0) == 2.0
    for attempt in (10, 1025, 5000, 10**6):
        assert 150.0 <= backoff(attempt) <= 300.0
