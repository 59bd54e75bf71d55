"""Pure rules of approve-with-changes: the schema check, the patch, quorum rounds, extensions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.core import edits, extend, rounds
from gateway.core.errors import PolicyNotAllowed, ValidationError
from gateway.core.events import EventKind
from gateway.core.models import Approval, EditTerms, Outcome, Policy, Proposal, Status, Vote
from gateway.core.policy import parse_policy

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "minimum": 1, "maximum": 5000},
        "currency": {"enum": ["EUR", "USD"]},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"}}}},
    },
    "required": ["amount"],
}
ARGS = {"amount": 4200, "currency": "EUR"}


def approval(**over: object) -> Approval:
    base = Approval(
        id="a1",
        idempotency_key="k",
        run_id="r",
        step="s",
        title="t",
        summary="",
        args=ARGS,
        state=None,
        channels=("web",),
        approvers=(),
        policy=Policy(quorum=2, timeout=timedelta(hours=1)),
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=NOW,
        deadline=NOW + timedelta(hours=1),
        args_hash="h0",
        terms=EditTerms(SCHEMA, ("amount",)),
    )
    return base.evolve(**over)


def test_the_schema_is_checked_and_errors_name_the_json_path() -> None:
    edits.check_args(SCHEMA, ARGS)
    with pytest.raises(ValidationError) as exc:
        edits.check_args(SCHEMA, {"amount": 9000})
    assert exc.value.details["field"] == "args.amount"
    assert "9000 is greater than the maximum of 5000" in exc.value.message
    with pytest.raises(ValidationError) as exc:
        edits.check_args(SCHEMA, {"amount": 1, "lines": [{"qty": "two"}]})
    assert exc.value.details["field"] == "args.lines[0].qty"
    with pytest.raises(ValidationError) as exc:
        edits.parse_terms({"type": "nonsense"}, True)
    assert exc.value.details["field"].startswith("args_schema")
    assert edits.parse_terms(None, None) is None
    assert edits.parse_terms(None, ["amount", "amount"]) == EditTerms(None, ("amount",))
    with pytest.raises(ValidationError, match="editable"):
        edits.parse_editable("amount")


def test_an_edit_touches_only_editable_fields_and_must_validate() -> None:
    terms = EditTerms(SCHEMA, ("amount",))
    edits.check_edit(terms, ARGS, {"amount": 3900, "currency": "EUR"})
    with pytest.raises(ValidationError) as exc:
        edits.check_edit(terms, ARGS, {"amount": 3900, "currency": "USD"})
    assert exc.value.details["field"] == "args.currency" and "not editable" in exc.value.message
    with pytest.raises(ValidationError) as exc:
        edits.check_edit(terms, ARGS, {"amount": 0, "currency": "EUR"})
    assert exc.value.details["field"] == "args.amount"
    with pytest.raises(ValidationError, match="does not allow edits"):
        edits.check_edit(EditTerms(SCHEMA, False), ARGS, ARGS)
    edits.check_edit(EditTerms(None, True), ARGS, {"amount": 1, "extra": [1]})  # any field, no schema


def test_the_patch_is_rfc_6902_and_the_change_reads_for_people() -> None:
    edited = {"amount": 3900, "currency": "EUR", "memo": "split"}
    patch = edits.make_patch(ARGS, edited)
    assert sorted(patch, key=lambda op: op["path"]) == [
        {"op": "replace", "path": "/amount", "value": 3900},
        {"op": "add", "path": "/memo", "value": "split"},
    ]
    assert edits.apply_patch(ARGS, patch) == edited
    assert edits.change_list(ARGS, edited) == "amount 4200 → 3900, memo (none) → split"


def _proposal(amount: int, by: str = "web:alice", round_: int = 1) -> Proposal:
    args = {**ARGS, "amount": amount}
    return Proposal(args, edits.make_patch(ARGS, args), by, round_, f"h{amount}", name=by.split(":")[1].title())


def test_votes_count_only_for_identical_args_and_an_edit_starts_a_new_round() -> None:
    a = approval()
    first = rounds.vote_on(a, Vote("web:bob", Outcome.APPROVE, NOW), None)
    assert first.event is EventKind.VOTE and first.approval.approvals_count == 1
    edited = rounds.vote_on(first.approval, Vote("web:alice", Outcome.APPROVE, NOW), _proposal(3900))
    assert edited.event is EventKind.EDITED and not edited.final
    assert [v.approver for v in edited.approval.votes] == ["web:alice"]  # bob must vote again
    assert edited.data["reset_votes"] == 1 and edited.data["changes"] == "amount 4200 → 3900"
    assert rounds.change_text(edited.approval) == (
        "changes proposed by Alice: amount 4200 → 3900 (votes restart on the changed args)"
    )
    # bob approves the current round (no args, or the same args): the quorum is met on the edit
    done = rounds.vote_on(edited.approval, Vote("web:bob", Outcome.APPROVE, NOW), _proposal(3900, "web:bob"))
    assert done.event is EventKind.APPROVED and done.final
    d = done.approval.decision
    assert d is not None and d.args == {"amount": 3900, "currency": "EUR"} and d.original_args == ARGS
    assert d.patch == [{"op": "replace", "path": "/amount", "value": 3900}]
    assert done.data["changes"] == "amount 4200 → 3900"
    assert rounds.change_text(done.approval) == "approved by web:bob with changes by Alice: amount 4200 → 3900"


def test_a_single_approver_edit_approves_at_once_and_a_reject_vetoes_any_round() -> None:
    a = approval(policy=Policy())
    done = rounds.vote_on(a, Vote("web:alice", Outcome.APPROVE, NOW, name="Alice"), _proposal(3900))
    assert done.event is EventKind.APPROVED and done.data["edited"] is True
    assert rounds.change_text(done.approval) == "approved with changes by Alice: amount 4200 → 3900"
    proposed = rounds.vote_on(approval(), Vote("web:alice", Outcome.APPROVE, NOW), _proposal(3900)).approval
    vetoed = rounds.vote_on(proposed, Vote("web:bob", Outcome.REJECT, NOW, comment="no"), None)
    assert vetoed.event is EventKind.REJECTED and vetoed.approval.decision is not None
    assert vetoed.approval.decision.args is None  # nothing runs: no approved args


def test_extend_rules() -> None:
    policy = parse_policy({"timeout": "1h", "extend": ["1d", "1h"], "max_extensions": 2, "remind": ["10m"]})
    assert policy.extend == (timedelta(hours=1), timedelta(days=1)) and policy.max_extensions == 2
    assert parse_policy({"timeout": "1h", "extend": ["1h"]}).max_extensions == 1
    a = approval(policy=policy)
    assert extend.choices(a) == policy.extend
    t = extend.extend(a, timedelta(hours=1), "web:bob", NOW + timedelta(minutes=55))
    assert t.event is EventKind.EXTENDED and t.approval.deadline == NOW + timedelta(hours=2)
    assert t.approval.wake_at == NOW + timedelta(hours=1, minutes=50)  # the reminder, before the new deadline
    assert t.data["extensions"] == 1 and t.data["policy"] == "inline"
    with pytest.raises(PolicyNotAllowed, match="policy 'inline' allows extensions of 1h, 1d, not 2h"):
        extend.extend(t.approval, timedelta(hours=2), "web:bob", NOW)
    twice = extend.extend(t.approval, timedelta(days=1), "web:bob", NOW).approval
    assert extend.choices(twice) == ()
    with pytest.raises(PolicyNotAllowed, match="at most 2 extension"):
        extend.extend(twice, timedelta(hours=1), "web:bob", NOW)
    with pytest.raises(PolicyNotAllowed, match="allows no extension"):
        extend.extend(approval(), timedelta(hours=1), "web:bob", NOW)
    with pytest.raises(ValidationError, match="extensions need a timeout"):
        parse_policy({"timeout": "never", "extend": ["1h"]})
    with pytest.raises(ValidationError, match="require_reason"):
        parse_policy({"require_reason": "yes"})


def test_restrict_keeps_the_default_policys_required_reason() -> None:
    from gateway.core.policy_bounds import check_inline

    strict = Policy(require_reason=True)
    check_inline(Policy(require_reason=True), "restrict", strict)
    with pytest.raises(PolicyNotAllowed, match=r"policy\.require_reason"):
        check_inline(Policy(), "restrict", strict)
    check_inline(Policy(), "allow", strict)
